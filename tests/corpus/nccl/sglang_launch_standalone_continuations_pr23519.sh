PYTHONPATH=python \
python3 -m sglang.launch_server \
  --model /models/LLM-Research/Meta-Llama-3.1-8B-Instruct \
  --speculative-algorithm STANDALONE \
  --speculative-draft-model-path /models/LLM-Research/Llama-3.2-1B-Instruct \
  --speculative-num-steps 3 \
  --speculative-eagle-topk 1 \
  --speculative-num-draft-tokens 4 \
  --attention-backend triton \
  --skip-server-warmup \
  --mem-fraction-static 0.7 \
  --host 0.0.0.0 \
  --port 7011 \
  --log-level info
