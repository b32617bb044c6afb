"""launch_env's STARTS holds every line its feed() can act on (without "NCCL_", its trigger) and no
more of a serving log; the scanner reads the pattern as Python does (_scan_launch.h); the launch
words are shlex's. Proven on every real line of the corpus and samples, damaged, and on made ones."""

import io
import itertools
import shlex
from functools import cache
from pathlib import Path
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from ingest.parsers import PARSERS, launch_env, native, parse_stream, processes
from ingest.parsers.records import ParseResult
from tests.samples import PROJECT_ROOT
from tests.test_parsers_engine import SETTINGS
from tests.test_parsers_native import _expected_mask, _same

LAUNCH = 1 << 7  # launch_env's reader bit (native.C_READERS)
STARTS = launch_env.Parser.STARTS
# What launch_env handed Python before: every line starting with `$`, `+`, `(`, an upper-case
# letter, a non-ASCII character, `export` or `env ` (the lines damaged below are these).
BROAD = launch_env.re.compile(r"(?:[$+(A-Z\x80-\U0010ffff]|export|env )")


@cache
def _real_lines() -> tuple[str, ...]:
    """Every line of the public corpus and our samples (the corpus holds the shared public samples
    verbatim, samples/ the GPU recordings: every clone tests the same lines)."""
    roots = [PROJECT_ROOT / "tests" / "corpus", PROJECT_ROOT / "samples"]
    seen: dict[str, None] = {}
    for root in roots:
        for path in sorted(root.rglob("*")) if root.is_dir() else []:
            if not path.is_file() or path.suffix == ".json" or path.stat().st_size > 20_000_000:
                continue
            data = path.read_bytes()
            if b"\x00" in data[:8192]:
                continue
            for line in data.decode("utf-8", "replace").split("\n"):
                seen.setdefault(line.rstrip("\r"), None)
    assert len(seen) > 3000
    return tuple(seen)


def _acts(line: str) -> bool:
    """Whether launch_env.feed records anything from the line alone."""
    result = ParseResult()
    launch_env.Parser(result).feed(1, line)
    return bool(result.nccl or result.settings or result.formats)


def _launch_lines() -> list[str]:
    return [line for line in _real_lines() if "NCCL_" in line or BROAD.match(line)]


def _damaged(line: str) -> list[str]:
    """What copies and cut-off logs do to a launch line."""
    out = [line[:k] for k in {1, 2, 3, 5, 8, 13, len(line) // 2, len(line) - 1} if 0 < k < len(line)]
    out += [line.replace(" ", "  "), line.replace(" ", "\t"), " " + line, line + " \t", line.replace("=", " = ", 1),
            line.replace(")", "", 1), line.replace("(", "((", 1), line.replace("$ ", "$"), line.replace("@", "", 1),
            line.replace("export ", "export\t"), line + " é", "é" + line, line.upper(), line.lower(),
            line.replace('"', "", 1), line + "\\"]
    return out


def _check(line: str) -> None:
    """STARTS holds the line where feed() acts on it without its trigger; the scanner's mask is
    the readers' own (an ASCII line: any other is every reader's)."""
    if "NCCL_" not in line and _acts(line):
        assert STARTS.match("\n" + line), line
    if line.isascii():
        assert _scan_mask(line) == _expected_mask(line), line


@cache
def _scanner():
    return native.scanner([processes.Tagger(ParseResult()), *(p(ParseResult()) for p in PARSERS.values())])


def _scan_mask(line: str) -> int:
    return _scanner().mask(line)


def test_every_real_line_launch_env_acts_on_starts_as_starts_says_and_the_scanner_agrees():
    acted = 0
    for line in _real_lines():
        _check(line)
        acted += "NCCL_" not in line and _acts(line)
    assert acted >= 4  # `SGLANG_...=1 python ...` launch prefixes and the like


def test_damaged_real_launch_lines_start_as_starts_says_and_the_scanner_agrees():
    lines = _launch_lines()
    assert len(lines) > 500
    for line in lines:
        for bad in _damaged(line):
            _check(bad)


def test_the_serving_log_lines_that_merely_start_upper_case_are_not_launch_lines():
    for line in ("INFO 11-29 21:25:30 [api_server.py:1024] Starting vLLM API server on http://0.0.0.0:8000",
                 "WARNING 11-29 21:25:30 [config.py:1] Casting torch.bfloat16 to torch.float16.",
                 "Mean TTFT (ms):                          81.25",
                 "(EngineCore_DP0 pid=1204) INFO 11-29 21:25:31 [core.py:77] Initializing a V1 LLM engine",
                 "(VllmWorker rank=0 pid=1561) DEBUG x=1", "Loading safetensors checkpoint shards: 100%"):
        assert not STARTS.match("\n" + line) and not _scan_mask(line) & LAUNCH, line
    for line in ("$ NCCL_ALGO=Ring python3 -m sglang.launch_server", "+ export SGLANG_X=1", "export\tFOO=1",
                 "(venv) $ FOO=1 python", "((sglang-0.5.9) ) [u@h ~]$ FOO=1 python", "(conda) root@h:~# FOO=1 x",
                 "Root@host:~$ FOO=1 x", "SGLANG_ENABLE_SPEC_V2=1 python -m sglang.launch_server", "env FOO=1 x"):
        assert STARTS.match("\n" + line) and _scan_mask(line) & LAUNCH, line


# Pieces of launch lines and of what is not one: environment tags, prompts, assignments, words.
_TAGS = ["(venv) ", "((sglang-0.5.9) ) ", "(/opt/conda env)", "(EngineCore_DP0 pid=1) ", "(", ")", "(a(b)c) ",
         "((x)) ", "(a\x1c) "]
_PROMPTS = ["$ ", "+ ", "$", "+\t", "$\x0b", "[u@h dir]$ ", "[u@h]# ", "root@host:~# ", "User@h:/x$ ", "a.b-c@h:~$ ",
            "É@h:~$ ", "@h:~$ ", "u@:$ "]
_BODY = ["export ", "export", "exportX=1 ", "export.a@h:~$ ", "env ", "env", "declare -x ", "NCCL_ALGO=Ring ", "FOO=1 ",
         "SGLANG_X=1", "Foo.bar=1", "a-b=1 ", "python -m x ", "INFO 11-29 ", "Mean TTFT (ms): 1", "x=1 ", "  ", "\t",
         "'a b'=1 ", 'F="a b" ', "É=1", "Ä ", "ÄB=1 ", "=", "@", "1A=2 ", "_X=1 ", "X=$HOME ", "-x NCCL_P=1 ",
         "A=\\ b ", "Speculative ", "x THROUGHPUT", "Accep", "accept", "nccl_", "NCCL version", "cl versio", "\ntotal"]


def test_made_launch_lines_start_as_starts_says_and_the_scanner_agrees():
    """Every tag, prompt and two pieces of body, each way round."""
    tags = ["", *_TAGS, "(venv) (x) ", "(a)(b)"]
    for tag, prompt, first, second in itertools.product(tags, ["", *_PROMPTS], _BODY, ["", *_BODY]):
        line = tag + prompt + first + second
        _check(line)
        _check(line.strip())


def _shlex_words(text: str) -> list[str]:
    """launch_env._words as it was: shlex for every text."""
    try:
        return shlex.split(text)
    except ValueError:
        return [launch_env._unquote(w) for w in text.split()]


_SHELL_CHARS = ["a", "B", "=", "-", ".", "'", '"', "\\", " ", "  ", "\t", "\r", "\n", "\x0b", "\x0c", "\x1c", "\x1f",
                "\x85", "\xa0", "\u2003", "\u3000", "é", "$", "#", "NCCL_X=", "python3"]


def _shlex_split(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:
        return None


@SETTINGS
@given(st.lists(st.sampled_from(_SHELL_CHARS), max_size=40).map("".join))
def test_launch_words_are_the_words_shlex_splits(text):
    assert launch_env._words(text) == _shlex_words(text)
    assert launch_env.shell_words(text) == _shlex_split(text)


def test_every_short_text_of_quotes_escapes_and_spaces_splits_into_shlex_words():
    chars = ["a", "=", "'", '"', "\\", " ", "\t", "\n", "\x0b", "\x1c", "\xa0", "é"]
    for size in range(5):
        for text in map("".join, itertools.product(chars, repeat=size)):
            assert launch_env._words(text) == _shlex_words(text), text


def test_launch_flag_values_lose_their_quotes_and_escapes_as_before():
    """_shell_value skips its re.sub where there is no backslash: the same values, every short one."""
    def before(value: str) -> str:
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            return value[1:-1]
        return launch_env.re.sub(r"\\(.)", r"\1", value)
    chars = ["a", ",", "\\", "'", '"', " ", "\n", "é"]
    for size in range(6):
        for value in map("".join, itertools.product(chars, repeat=size)):
            assert launch_env._shell_value(value) == before(value), value


def test_real_launch_lines_split_into_the_words_shlex_splits():
    for line in _launch_lines():
        for text in (line, line.strip(), *_damaged(line)[:6]):
            assert launch_env._words(text) == _shlex_words(text), text


def test_the_native_engine_reads_real_launch_lines_as_the_lines_engine_does():
    lines = _launch_lines()
    damaged = [bad for line in lines[::7] for bad in _damaged(line)]
    vllm = [line for line in _real_lines() if line.startswith(("INFO ", "WARNING ", "(", "Mean ", "Total "))][:3000]
    body = "\n".join(lines + damaged + vllm + lines[::-1]).encode()
    for size in (1 << 10, 1 << 14, 1 << 21):
        _same(body, size, size)


def test_the_scanner_reads_a_vllm_log_of_upper_case_lines_itself():
    """Lines that only start upper-case (vLLM's `INFO 11-29 ...`) stay in C: fed to Python, each
    one cost a Python call per reader before."""
    sample = "INFO 11-29 21:25:{:02d} [api_server.py:1024] Starting vLLM API server on http://0.0.0.0:80{:02d}\n"
    data = ("$ vllm serve /models/x --tensor-parallel-size 2\n" + "".join(
        sample.format(k % 60, k % 100) for k in range(5000))).encode()
    with mock.patch.object(processes.Tagger, "feed", autospec=True, side_effect=processes.Tagger.feed) as feed:
        parse_stream(io.BytesIO(data), engine="native")
    assert feed.call_count < 10
    _same(data, 1 << 12, 1 << 12)


def test_the_launch_pattern_is_the_one_the_scanner_reads():
    assert STARTS.pattern == native.C_STARTS["launch_env"]
    assert Path(native.__file__).with_name("_scan_launch.h").is_file()


def test_launch_words_of_every_real_line_and_its_damaged_copies_are_the_words_shlex_splits():
    """Real quoted launch lines (`export NCCL_NET="AWS Libfabric"`, `NCCL_IB_HCA="=mlx5_0,..."`)
    are split without shlex now (launch_env and SGLang's launch command): the same words, also cut
    off mid-quote or with a quote lost."""
    quoted = 0
    for line in _real_lines():
        text = line.strip()
        assert launch_env._words(text) == _shlex_words(text), line
        assert launch_env.shell_words(text) == _shlex_split(text), line
        if BROAD.match(line) and ('"' in line or "'" in line):
            quoted += 1
            for bad in _damaged(line):
                assert launch_env._words(bad.strip()) == _shlex_words(bad.strip()), bad
                assert launch_env.shell_words(bad) == _shlex_split(bad), bad
    assert quoted >= 10


def test_an_env_dump_is_matched_only_where_the_cheap_look_finds_pid_and_environ():
    """launch_env.feed and the Tagger match _DUMP only in a line holding "environ" and "pid=" (a long
    mpirun line naming `environment` took 50 µs to fail it): every real line and its damaged copies."""
    dumps = 0
    for line in _real_lines():
        for text in (line, *(_damaged(line) if "environ" in line else ())):
            for pattern in (launch_env._DUMP, processes._DUMP):
                m = pattern.match(text)
                assert m is None or ("environ" in text and "pid=" in text), text
                dumps += m is not None
    assert dumps >= 20


# launch_env._FLAG as it was written before its look-behinds moved after the `-`: the reference.
_FLAG_AS_WRITTEN = launch_env.re.compile(
    r"""(?:^|(?<!declare)\s)(?:-x|-e|--env)[\s=]+(NCCL_[A-Z0-9_]+)=("[^"]*"|'[^']*'|\S+)""")


def test_launch_flags_are_found_as_the_pattern_as_written_finds_them():
    lines = [line for line in _real_lines() if "-x" in line or "-e" in line or "--env" in line]
    assert len(lines) > 50
    made = ["-x NCCL_A=1", "declare -x NCCL_A=1", "declare\t-x NCCL_A=1 -x NCCL_B=2", "xdeclare -x NCCL_A=1",
            "a -x NCCL_A=1-x NCCL_B=2", 'a -x NCCL_A="b c" -x NCCL_B=2', "a -e=NCCL_A=1\t--env NCCL_B='x y'",
            "a--env NCCL_A=1", "\t-x\tNCCL_A=1", "-xNCCL_A=1", "a -x  = NCCL_A=1", "declare -x -x NCCL_A=1"]
    for line in [*lines, *made]:
        for text in (line, *_damaged(line), line.replace("-x", "declare -x", 1), line.replace(" -", "\t-")):
            assert launch_env._FLAG.findall(text) == _FLAG_AS_WRITTEN.findall(text), text
