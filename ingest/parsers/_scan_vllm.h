/* Serving benchmark result blocks in the native scanner (serving.BlockReader, FORMATS §2.1, §2.3).
 *
 * A `Serving Benchmark Result` block is read by two readers at once, SGLang's and vLLM's (both
 * hold a BlockReader, fed the same lines), and on a log of bench runs most lines are its rows:
 * with a block open both readers are busy() and, before this, every row went through Python
 * twice (the regex, serving_key, parse_value, a Row) plus the engine's per-line feed.
 *
 * native.py sets F_BENCH when the only readers busy are those two, each with a block open, of the
 * same prefix (a copied block's `# `), tool and subsection; it hands over both blocks' rows and
 * sections lists (bench()), the blocks themselves while their tool is unknown (note_row and
 * note_section are called on them here, before the row or section joins, as BlockReader does) and
 * whether a `Per-position acceptance` subsection is open. Here a line is read only if it is one of:
 *   - a row, `Label:   value` (serving._ROW) with a value parse_value() reads as an int, a float,
 *     a word (kept as text; nan, nan%, n/a, none give no row) or `not set`, and a label
 *     serving.KEYS knows, holding no reader's literal but a client one (`request rate:`: the readers
 *     do nothing more with it inside a block) or SGLang's `sglang` as the value alone (no launch
 *     command): the same row joins both blocks' rows (kept as plain values, BenchRow, and made a
 *     serving.Row only where Python may look at the blocks: bench_flush); a `Position i` row under a
 *     subsection is keyed `acceptance_{key}_pct`; a valueless row opens that subsection (both readers'
 *     `subsection`, handed over as `readers`, set here, a Row of no value joins); Its STARTS may be launch_env's (a capital first: no `=` on the
 *     line, so _command finds no assignment) or the bench readers' (fed anyway);
 *   - a section title `-----Name-----` (serving._SECTION) holding no literal but `---`: its header
 *     joins both blocks' sections, and the readers' subsection is "" again;
 *   - a blank line.
 * Such a line the engines hand the context Watcher (a reader's STARTS or literal is on it) is
 * offered to it here as every format's lines are (offer_line: context_offer, _scan_context.h). A line that closes the blocks, a footer (`=====`) or a title, with
 * no literal but the title's and `---` on it, or a line no row, section or blank leads (closes_inert), is
 * closed here and its owner's records written (bench_close_here, _scan_bench.h) or, where that is not
 * plain, fed to the two bench readers alone by one call (bench_close: native._Parse.bench_close writes
 * the blocks' records and gives the flags the scan reads on with); a title with no reader busy opens
 * both readers' blocks (bench_title, their open_title()) and the scan reads on in F_BENCH. A line that
 * ends the blocks and is another reader's (a `non-default args` line after a block: closes_before) has
 * the blocks closed here and is then read as with none open (read_line). Any other line goes back to
 * Python, which reads it as the line engine does.
 */

/* ---- vLLM process tags and engine throughput lines ------------------------------------------
 *
 * native.py arms this part once a parse (vllm_arm) with the vLLM parser's engine_windows dict, the
 * Tagger's launch_lines list, the result's processes, and the parser's field and tag tables. Then a
 * line is read here when it is
 *   - `(Name[_n][ rank=r][ TPn] pid=N) ...` (processes._VLLM) of a process the Tagger knows with
 *     every field that line would set set already (its label, its rank where the tag names one,
 *     the hint its name gives; an APIServer line is a launch line, appended to launch_lines), or
 *     an untagged line once the Tagger has its main process;
 *   - and the rest holds no reader's literal but vLLM's `throughput:`, `metrics:` or `LLM` (and
 *     STARTS none but the Tagger's and launch_env's, for which it holds no assignment and no
 *     prompt): nothing, or vllm.Parser._engine's `[Engine N: ]Avg prompt throughput: X tokens/s,
 *     Avg generation throughput: Y tokens/s, Running: ...` (Y = 0: an idle interval, its line
 *     `used`), or a `SpecDecoding metrics: ...` / `Speculative metrics: ...` line (_spec: V1 with or
 *     without a mean length, without drafts its line `used`; V0's counters differenced against
 *     v0_previous), once their formats' first records were set; an `LLM` line only without
 *     `version` or `with config:` (feed takes no branch for `vLLM Version : 0.8.5`); or, on an
 *     ASCII line without those three, a V0 `SpecDecodeWorker stage times: k_ms=v ...` line
 *     (vllm.Parser._stage: its phases, stage_window, launch_used, the proposal time per cycle by
 *     launch_k), launch_env idle on it (its `=` are fields', not a first word's);
 *   - or untagged, a line only launch_env's STARTS names (a capital first) holding no assignment,
 *     prompt or literal: launch_env does nothing with it (read_line hands all of those back).
 * Anything else is declined: read_line reads it as before (or hands it to Python). */

#define F_VLLM_ENGINE 8192  /* native.F_VLLM_ENGINE: "vllm_engine" is among the formats */
#define F_VLLM_SPEC 16384  /* "vllm_spec" is among the formats */
#define F_VLLM_STAGES (1 << 20)  /* "vllm_stage_times" is among the formats */
#define DECLINE 2
#define BENCH_CLOSED 3  /* bench_line closed the blocks at a line it leaves to read_line (closes_before) */
#define ENGINE_FIELDS 16
#define TAG_MAX 96
#define TAG_KEPT 16
#define SPEC_SEEN 64
#define SPEC_LABEL_MAX 48

enum { NAME_OTHER, NAME_LAUNCHER, NAME_WORKER };

typedef struct {
    int armed;
    PyObject *windows, *launch_lines, *processes, *launchers, *workers;
    PyObject *k_label, *k_rank, *k_hints, *k_pid, *hint[3];  /* dict keys, the hints (by NAME_*) */
    int lit_throughput, lit_metrics, lit_llm;  /* vLLM's `throughput:`, `metrics:`, `LLM` literals, -1 when none */
    int lit_stage;  /* vLLM's `stage times`, -1 when none */
    int s_stage, s_phases[5];
    long long stage_k;  /* the draft length a stage line read (launch_k_of), for vllm_stage */  /* "vllm_stage_times"; the phases of STAGE_KEYS, then "proposal per token" */
    struct { char key[40]; Py_ssize_t len; int id; } spec_key[24];  /* vllm._SPEC_KEYS */
    int nspec_key;
    /* spec labels met before as written (case, the `tokens tokens` typo) and their spec_key id (-1 none):
     * a line's eight labels repeat line after line (spec_label_id) */
    struct { char text[SPEC_LABEL_MAX]; Py_ssize_t len; int id; } spec_seen[SPEC_SEEN];
    int s_source, s_prompt;
    PyObject *parser;  /* the vllm.Parser: its spec_window */
    int s_spec, s_spec_names[9], s_pos[16];  /* "vllm_spec", its metrics, acceptance_pos_1.. */
    struct { char key[32]; Py_ssize_t len; int metric; } field[ENGINE_FIELDS];
    int nfield;
    /* the last tag read: its text up to `)`, the process's tag (`pid N`), the name's kind */
    char tag_text[TAG_MAX]; Py_ssize_t tag_len;
    PyObject *tag; int tag_idx, tag_kind, tag_ranked; long long tag_pid;
    /* the last tags read, as those fields (a log's processes interleave their lines: one missed most) */
    struct { char text[TAG_MAX]; Py_ssize_t len; PyObject *tag; int idx, kind, ranked; long long pid; } tags[TAG_KEPT];
    int tag_next;  /* the slot the next tag made takes */
    long long rank_dp; int rank_idx;  /* the last engine line's DP rank (-1 none) and its string, rank_idx -1: none yet */
} VllmLines;

#define F_BENCH 4096  /* native.F_BENCH: both bench readers' blocks are open and handed over (bench()) */

#define BENCH_LABELS 256  /* a quarter full at most on real logs (56 labels): few probes, no evictions */
#define BENCH_PROBES 8
#define BENCH_LABEL_MAX 64
#define ROW_HEADS 512  /* (direct-mapped: a log's few dozen labels, each with its own paddings and marks) */
#define ROW_HEAD_MAX 96

/* A row read here, kept as plain values while nothing but the scanner looks at its block: a serving.Row
 * is made of it only where Python may (bench_flush: the scan's end, a closer or note_row called, a block
 * listed by add_block); a block closed here past the list's cap never has one. */
enum { ROW_NONE, ROW_INT, ROW_FLOAT, ROW_TEXT };
typedef struct {
    int64_t line;
    PyObject *label, *key, *text;  /* owned; text: a word's value (ROW_TEXT), else NULL */
    long long i;  /* ROW_INT's value */
    double x;  /* ROW_FLOAT's value */
    int kind;  /* ROW_NONE: a valueless row (a subsection's), its value None */
} BenchRow;

struct vllm_state {
    PyObject *rows[2], *sections[2];  /* the two open blocks' lists (SGLang's, vLLM's) */
    PyObject *row_type;  /* serving.Row */
    PyObject *keys;  /* serving.KEYS: label -> serving_key(label) */
    PyObject *offer;  /* result.offer (context.Watcher.offer) or None */
    context_fast *ctx;  /* the scanner's Watcher binding (_scan_context.h, env_bind()) */
    char prefix[4]; Py_ssize_t prefix_len, prefix_need;  /* a copied block's mark (`# `), and its rstrip() */
    int nccl_idle;  /* nccl_tests holds no rows: a `#` line that names none of its words changes nothing */
    uint64_t dash_lits;  /* the trigger literals whose text is `---`, and the scanner's own (`tok/`) */
    /* BlockReader's client literals (`request rate:`, `request concurrency:`): on a row of an open
     * block the readers do nothing more with them; and SGLang's `sglang`, read on a row whose value it is */
    uint64_t client_lits, sglang_lits;
    /* the two blocks while their tool is unknown (note_row and note_section are called on them), else NULL */
    PyObject *blocks[2];
    /* serving._row_tool (bench_readers()), what Block.note_row names a block's tool by, and what it gave for a
     * label, not first and first: note_row is read here from them (bench_note_row), no Python call a row */
    PyObject *row_tool, *tools[2];
    /* serving.Block (bench_readers()): a title's blocks are made here as BlockReader.open_title makes them
     * (bench_open_title), or NULL: open_title is called */
    PyObject *block_type;
    PyObject *readers[2];  /* the two BlockReaders (their `subsection` is set here), or NULL */
    int subsection;  /* both readers have a `Per-position acceptance` subsection open */
    /* The two BlockReaders (bench_readers()), whose open_title() bench_title calls, and the readers'
     * `Serving Benchmark Result` literals; `armed_here`: bench_title opened the blocks in this scan */
    PyObject *openers[2];
    uint64_t title_lits;
    int armed_here;
    /* native._Parse.bench_close (bench_readers()), called at a line that closes the open blocks; the
     * flags it gives the scan reads on with (`reflag`: not taken yet, bench_flags) */
    PyObject *closer;
    int reflag, next_flags;
    /* the heads of number rows met before and what the line tests of bench_line_read gave on them (row_head) */
    struct { char text[ROW_HEAD_MAX]; Py_ssize_t len; unsigned by_start; unsigned char words, eq; } heads[ROW_HEADS];
    /* labels met before, with their str and key (and the key under a subsection): they repeat block after block */
    struct { char text[BENCH_LABEL_MAX]; Py_ssize_t len; PyObject *label, *key, *pkey; } seen[BENCH_LABELS];
    /* the open blocks' rows read here and not yet in their lists (both blocks', in order, after those) */
    BenchRow *pend;
    Py_ssize_t npend, pend_cap;
    VllmLines lines;  /* vLLM's tagged and engine lines (vllm_arm) */
    struct llama_state *llama;  /* llama.cpp's timing and slot lines (_scan_llamacpp.h, llamacpp_arm) */
    struct args_state *args;  /* vLLM's `non-default args` lines (_scan_vllm_args.h, vllm_args_arm) */
    struct bench_emit *emit;  /* what a block closed here writes its records with (_scan_bench.h, bench_emit) */
};

struct llama_state;
static void llama_release(struct llama_state *ls);  /* _scan_llamacpp.h */
struct args_state;
static void args_release(struct args_state *a);  /* _scan_vllm_args.h */
static uint64_t args_literal(const Scanner *self);
static int args_line(Scanner *self, PyObject *parser, const char *s, Py_ssize_t n, int flags);
struct bench_emit;  /* _scan_bench.h */
static void bench_emit_release(struct bench_emit *E);
static int bench_close_here(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, int title,
                            int flags);
static int bench_tests_idle(Scanner *self);

/* The state, made at its first use (NULL: no memory, the error set). */
static struct vllm_state *vllm_state_of(Scanner *self) {
    struct vllm_state *v = self->vllm;
    if (v) return v;
    v = self->vllm = calloc(1, sizeof(*v));
    if (!v) { PyErr_NoMemory(); return NULL; }
    v->ctx = &self->ctx;
    v->lines.lit_throughput = v->lines.lit_metrics = v->lines.lit_llm = v->lines.lit_stage = -1;
    v->lines.rank_idx = -1;
    for (int k = 0; k < self->nlit; k++) {
        if ((self->lit_len[k] == 3 && memeq(self->lit[k], "---", 3)) || self->lit_reader[k] < 0)
            v->dash_lits |= 1ull << k;
        int bench_reader = self->lit_reader[k] == R_SGLANG || self->lit_reader[k] == R_VLLM;
        if (bench_reader && ((self->lit_len[k] == 13 && memeq(self->lit[k], "request rate:", 13))
                             || (self->lit_len[k] == 20 && memeq(self->lit[k], "request concurrency:", 20))))
            v->client_lits |= 1ull << k;
        if (bench_reader && self->lit_len[k] == 24 && memeq(self->lit[k], "Serving Benchmark Result", 24))
            v->title_lits |= 1ull << k;
        if (self->lit_reader[k] == R_SGLANG && self->lit_len[k] == 6 && memeq(self->lit[k], "sglang", 6))
            v->sglang_lits |= 1ull << k;
        if (self->lit_reader[k] == R_VLLM && self->lit_len[k] == 11 && memeq(self->lit[k], "throughput:", 11))
            v->lines.lit_throughput = k;
        if (self->lit_reader[k] == R_VLLM && self->lit_len[k] == 8 && memeq(self->lit[k], "metrics:", 8))
            v->lines.lit_metrics = k;
        if (self->lit_reader[k] == R_VLLM && self->lit_len[k] == 3 && memeq(self->lit[k], "LLM", 3))
            v->lines.lit_llm = k;
        if (self->lit_reader[k] == R_VLLM && self->lit_len[k] == 11 && memeq(self->lit[k], "stage times", 11))
            v->lines.lit_stage = k;
    }
    return v;
}

static void vllm_lines_release(VllmLines *l) {
    PyObject **refs[] = {&l->parser, &l->windows, &l->launch_lines, &l->processes, &l->launchers, &l->workers, &l->k_label,
                         &l->k_rank, &l->k_hints, &l->k_pid, &l->hint[0], &l->hint[1], &l->hint[2], &l->tag};
    for (size_t i = 0; i < sizeof(refs) / sizeof(*refs); i++) Py_CLEAR(*refs[i]);
    for (int i = 0; i < TAG_KEPT; i++) { Py_CLEAR(l->tags[i].tag); l->tags[i].len = 0; }
    l->armed = 0, l->tag_len = 0, l->tag_next = 0, l->rank_idx = -1;
}

/* The rows kept (BenchRow) let go, made no Row of. */
static void bench_pend_clear(struct vllm_state *v) {
    for (Py_ssize_t k = 0; k < v->npend; k++) {
        Py_CLEAR(v->pend[k].label); Py_CLEAR(v->pend[k].key); Py_CLEAR(v->pend[k].text);
    }
    v->npend = 0;
}

/* A kept row's value as the Row holds it (a new reference). */
static PyObject *bench_row_value(const BenchRow *r) {
    switch (r->kind) {
    case ROW_INT: return PyLong_FromLongLong(r->i);
    case ROW_FLOAT: return PyFloat_FromDouble(r->x);
    case ROW_TEXT: return Py_NewRef(r->text);
    default: return Py_NewRef(Py_None);
    }
}

/* The rows kept made serving.Rows and appended to both open blocks' lists, as BlockReader._row appends
 * them: before Python may look at the blocks. 0, or -1 on error (the rows not made are let go). */
static int bench_flush(struct vllm_state *v) {
    if (!v || !v->npend) return 0;
    int bad = !v->rows[0] || !v->rows[1] || !v->row_type;
    for (Py_ssize_t k = 0; k < v->npend && !bad; k++) {
        BenchRow *r = &v->pend[k];
        PyObject *ln = PyLong_FromLongLong(r->line), *value = ln ? bench_row_value(r) : NULL, *row = NULL;
        if (value) {
            PyObject *argv[4] = {ln, r->label, r->key, value};
            row = PyObject_Vectorcall(v->row_type, argv, 4, NULL);
        }
        Py_XDECREF(ln);
        Py_XDECREF(value);
        bad = !row || PyList_Append(v->rows[0], row) < 0 || PyList_Append(v->rows[1], row) < 0;
        Py_XDECREF(row);
    }
    if (bad && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "rows kept with no block open");
    bench_pend_clear(v);
    return bad ? -1 : 0;
}

/* A row read kept (its label and key referenced anew; `text` stolen): 0, or -1 on error. */
static int bench_push(struct vllm_state *v, int64_t line, PyObject *label, PyObject *key, int kind, long long i,
                      double x, PyObject *text) {
    if (v->npend == v->pend_cap) {
        Py_ssize_t cap = v->pend_cap ? 2 * v->pend_cap : 64;
        BenchRow *more = cap < PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(BenchRow)
            ? realloc(v->pend, (size_t)cap * sizeof(BenchRow)) : NULL;
        if (!more) { Py_XDECREF(text); PyErr_NoMemory(); return -1; }
        v->pend = more, v->pend_cap = cap;
    }
    BenchRow *r = &v->pend[v->npend++];
    r->line = line, r->kind = kind, r->i = i, r->x = x, r->text = text;
    r->label = Py_NewRef(label), r->key = Py_NewRef(key);
    return 0;
}

static void vllm_release(Scanner *self) {
    struct vllm_state *v = self->vllm;
    if (!v) return;
    vllm_lines_release(&v->lines);
    llama_release(v->llama);
    args_release(v->args);
    bench_emit_release(v->emit);
    bench_pend_clear(v);
    free(v->pend);
    for (int i = 0; i < 2; i++) {
        Py_CLEAR(v->rows[i]); Py_CLEAR(v->sections[i]); Py_CLEAR(v->blocks[i]); Py_CLEAR(v->readers[i]);
        Py_CLEAR(v->openers[i]);
    }
    Py_CLEAR(v->closer);
    Py_CLEAR(v->row_tool); Py_CLEAR(v->tools[0]); Py_CLEAR(v->tools[1]);
    Py_CLEAR(v->block_type);
    Py_CLEAR(v->row_type);
    Py_CLEAR(v->keys);
    Py_CLEAR(v->offer);
    for (int i = 0; i < BENCH_LABELS; i++) { Py_CLEAR(v->seen[i].label); Py_CLEAR(v->seen[i].key); Py_CLEAR(v->seen[i].pkey); }
    free(v);
    self->vllm = NULL;
}

/* The Row type and serving.KEYS rows are made with; labels looked up in another table are forgotten. */
static void bench_tables(struct vllm_state *v, PyObject *row_type, PyObject *keys) {
    if (v->keys == keys && v->row_type == row_type) return;
    for (int i = 0; i < BENCH_LABELS; i++) {
        Py_CLEAR(v->seen[i].label); Py_CLEAR(v->seen[i].key); Py_CLEAR(v->seen[i].pkey);
        v->seen[i].len = 0;
    }
    Py_INCREF(keys);
    Py_XSETREF(v->keys, keys);
    Py_INCREF(row_type);
    Py_XSETREF(v->row_type, row_type);
}

/* bench_readers(sglang_reader, vllm_reader, Row, keys[, close[, row_tool[, Block]]]): the two BlockReaders
 * whose blocks bench_title opens (as their open_title()) and the call that reads a line closing them
 * (bench_close, or None: such lines are Python's), serving._row_tool (None: note_row is called) and
 * serving.Block, made here as its generated __init__ makes it (native._block_plain; None: open_title is called); or bench_readers(None), which lets them go (`close` holds the
 * parse, which holds the scanner: the cycle is broken here). */
static PyObject *Scanner_bench_readers(Scanner *self, PyObject *args) {
    if (not_ready(self)) return NULL;
    PyObject *a, *b = Py_None, *row_type = NULL, *keys = NULL, *close = Py_None, *row_tool = Py_None;
    PyObject *block_type = Py_None;
    if (!PyArg_ParseTuple(args, "O|OO!O!OOO", &a, &b, &PyType_Type, &row_type, &PyDict_Type, &keys, &close, &row_tool,
                          &block_type))
        return NULL;
    if ((a != Py_None && (b == Py_None || !row_type || !keys)) || (close != Py_None && !PyCallable_Check(close))
        || (row_tool != Py_None && !PyCallable_Check(row_tool)) || (block_type != Py_None && !PyType_Check(block_type))
        || (block_type != Py_None && ((PyTypeObject *)block_type)->tp_new != PyBaseObject_Type.tp_new)) {
        PyErr_SetString(PyExc_TypeError, "bench_readers(sglang_reader, vllm_reader, Row, keys[, close[, row_tool[, "
                                         "Block]]]) or bench_readers(None)");
        return NULL;
    }
    struct vllm_state *v = vllm_state_of(self);
    if (!v) return NULL;
    Py_CLEAR(v->openers[0]);
    Py_CLEAR(v->openers[1]);
    Py_CLEAR(v->closer);
    Py_CLEAR(v->block_type);
    if (a == Py_None || row_tool != v->row_tool) {  /* what another function gave is not this one's */
        Py_CLEAR(v->row_tool); Py_CLEAR(v->tools[0]); Py_CLEAR(v->tools[1]);
    }
    if (a != Py_None) {
        bench_tables(v, row_type, keys);
        Py_INCREF(a), Py_INCREF(b);
        v->openers[0] = a, v->openers[1] = b;
        if (close != Py_None) Py_INCREF(close), v->closer = close;
        if (block_type != Py_None) v->block_type = Py_NewRef(block_type);
        if (row_tool != Py_None && !v->row_tool) {
            if (!(v->tools[0] = PyDict_New()) || !(v->tools[1] = PyDict_New())) {
                Py_CLEAR(v->tools[0]);
                return NULL;
            }
            v->row_tool = Py_NewRef(row_tool);
        }
    }
    Py_RETURN_NONE;
}

/* bench(rows_sglang, sections_sglang, rows_vllm, sections_vllm, Row, keys) before a scan with
 * F_BENCH; bench(None) after it (the lists are let go). */
static PyObject *Scanner_bench(Scanner *self, PyObject *args) {
    if (not_ready(self)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    struct vllm_state *v = self->vllm;
    if (n == 1 && PyTuple_GET_ITEM(args, 0) == Py_None) {
        if (v) {
            if (bench_flush(v) < 0) return NULL;  /* (the scan's end has made them: none kept) */
            for (int i = 0; i < 2; i++) {
                Py_CLEAR(v->rows[i]); Py_CLEAR(v->sections[i]); Py_CLEAR(v->blocks[i]); Py_CLEAR(v->readers[i]);
            }
            v->armed_here = 0;
        }
        Py_RETURN_NONE;
    }
    PyObject *ra, *sa, *rb, *sb, *row_type, *keys, *offer, *blocks = Py_None, *readers = Py_None;
    const char *prefix;
    Py_ssize_t prefix_len;
    int nccl_idle, subsection = 0;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!Os#p|OpO", &PyList_Type, &ra, &PyList_Type, &sa, &PyList_Type, &rb,
                          &PyList_Type, &sb, &PyType_Type, &row_type, &PyDict_Type, &keys, &offer, &prefix,
                          &prefix_len, &nccl_idle, &blocks, &subsection, &readers)) return NULL;
    if ((blocks != Py_None && !(PyTuple_CheckExact(blocks) && PyTuple_GET_SIZE(blocks) == 2))
        || (readers != Py_None && !(PyTuple_CheckExact(readers) && PyTuple_GET_SIZE(readers) == 2))) {
        PyErr_SetString(PyExc_TypeError, "blocks and readers must be None or a pair (a tuple)");
        return NULL;
    }
    if (prefix_len >= (Py_ssize_t)sizeof(v->prefix)) {
        PyErr_SetString(PyExc_ValueError, "a block's prefix is a mark and a space at most");
        return NULL;
    }
    if (offer != Py_None && !PyCallable_Check(offer)) {
        PyErr_SetString(PyExc_TypeError, "offer must be callable or None");
        return NULL;
    }
    if (!v && !(v = vllm_state_of(self))) return NULL;
    if (bench_flush(v) < 0) return NULL;
    bench_tables(v, row_type, keys);
    v->armed_here = 0;
    PyObject *lists[4] = {ra, sa, rb, sb};
    for (int i = 0; i < 4; i++) Py_INCREF(lists[i]);
    Py_XSETREF(v->rows[0], ra);
    Py_XSETREF(v->sections[0], sa);
    Py_XSETREF(v->rows[1], rb);
    Py_XSETREF(v->sections[1], sb);
    Py_INCREF(offer);
    Py_XSETREF(v->offer, offer);
    memcpy(v->prefix, prefix, (size_t)prefix_len);
    v->prefix_len = v->prefix_need = prefix_len;
    while (v->prefix_need > 0 && is_space(v->prefix[v->prefix_need - 1])) v->prefix_need--;
    v->nccl_idle = nccl_idle;
    v->subsection = subsection;
    for (int i = 0; i < 2; i++) {
        PyObject *b = blocks == Py_None ? NULL : PyTuple_GET_ITEM(blocks, i);
        PyObject *r = readers == Py_None ? NULL : PyTuple_GET_ITEM(readers, i);
        Py_XINCREF(b);
        Py_XSETREF(v->blocks[i], b);
        Py_XINCREF(r);
        Py_XSETREF(v->readers[i], r);
    }
    Py_RETURN_NONE;
}

/* serving._ROW's label characters: [A-Za-z0-9 ()/%#.,\-] */
static inline int label_char(char c) { return CLASS[(unsigned char)c] & C_LABEL; }

static inline int is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/* parse_value() of a row's value token t[0:len] when it gives an int or a float: 1 with *kind ROW_INT
 * (*i) or ROW_FLOAT (*x); 0 when the text is another (text, nan, an exponent, 19 digits...): Python's. */
static int bench_number(const char *t, Py_ssize_t len, int *kind, long long *i, double *x) {
    Py_ssize_t k = (t[0] == '+' || t[0] == '-') ? 1 : 0, d1 = 0, d2 = 0, dot = 0;
    while (k + d1 < len && is_digit(t[k + d1])) d1++;
    Py_ssize_t j = k + d1;
    if (j < len && t[j] == '.') {
        dot = 1;
        while (j + 1 + d2 < len && is_digit(t[j + 1 + d2])) d2++;
        j += 1 + d2;
    }
    if (j != len || d1 + d2 == 0) return 0;
    if (!dot) {  /* [-+]?\d{1,18}: int(text) */
        if (d1 > 18) return 0;
        long long v = 0;
        for (Py_ssize_t c = k; c < len; c++) v = v * 10 + (t[c] - '0');
        *kind = ROW_INT, *i = t[0] == '-' ? -v : v;
        return 1;
    }
    if (len > 40) return 0;  /* float(text), finite at this length (no exponent) */
    /* to_double reads `-?\d*\.\d*` as float() does (a `+` changes nothing) */
    *kind = ROW_FLOAT, *x = t[0] == '+' ? to_double(t + 1, len - 1) : to_double(t, len);
    return 1;
}

/* bench_number's value as an object (a new reference in *out): 1, 0 (Python's), -1 on error. */
static int bench_value(const char *t, Py_ssize_t len, PyObject **out) {
    int kind;
    long long i;
    double x;
    if (!bench_number(t, len, &kind, &i, &x)) return 0;
    *out = kind == ROW_INT ? PyLong_FromLongLong(i) : PyFloat_FromDouble(x);
    return *out ? 1 : -1;
}

/* The label's str and key (borrowed, held in `seen`), or 0 when serving.KEYS lacks it. `sub`: the
 * key of a `Position i` row under a subsection, f"acceptance_{key}_pct" (BlockReader._row). */
/* A label's slot hash, eight bytes a step (fnv1a's byte a step was a fifth of a row's reading). */
static unsigned label_hash(const char *s, Py_ssize_t n) {
    const uint64_t mul = 0x9E3779B97F4A7C15ull;
    uint64_t h = (uint64_t)n * mul, w;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * mul;
        h ^= h >> 29;
    }
    if (i < n) {
        w = 0;
        memcpy(&w, s + i, (size_t)(n - i));
        h = (h ^ w) * mul;
    }
    return (unsigned)(h >> 32);
}

static int bench_label(struct vllm_state *v, const char *s, Py_ssize_t n, int sub, PyObject **label, PyObject **key) {
    /* open addressing over a few slots (a direct-mapped table of 64 had a third of a log's labels
     * evicting each other, each miss a str made and a dict lookup); all full: the first slot is reused */
    unsigned home = label_hash(s, n) & (BENCH_LABELS - 1), slot = home;
    for (int probe = 0; probe < BENCH_PROBES; probe++, slot = (slot + 1) & (BENCH_LABELS - 1)) {
        if (!v->seen[slot].label) break;
        if (v->seen[slot].len == n && memeq(v->seen[slot].text, s, (size_t)n)) {
            *label = v->seen[slot].label, *key = v->seen[slot].key;
            if (sub) {
                if (!v->seen[slot].pkey && !(v->seen[slot].pkey = PyUnicode_FromFormat("acceptance_%U_pct", *key)))
                    return -1;
                *key = v->seen[slot].pkey;
            }
            return 1;
        }
    }
    if (v->seen[slot].label) slot = home;  /* (every probe taken) */
    PyObject *u = PyUnicode_DecodeASCII(s, n, NULL);
    if (!u) return -1;
    PyObject *k = PyDict_GetItemWithError(v->keys, u);
    if (!k || !PyUnicode_CheckExact(k)) {
        Py_DECREF(u);
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_INCREF(k);
    PyObject *pk = sub ? PyUnicode_FromFormat("acceptance_%U_pct", k) : NULL;
    if (sub && !pk) { Py_DECREF(u); Py_DECREF(k); return -1; }
    if (n <= BENCH_LABEL_MAX) {
        Py_XSETREF(v->seen[slot].label, u);
        Py_XSETREF(v->seen[slot].key, k);
        Py_XSETREF(v->seen[slot].pkey, pk);
        memcpy(v->seen[slot].text, s, (size_t)n);
        v->seen[slot].len = n;
        *label = u, *key = sub ? pk : k;
        return 1;
    }
    /* a label too long to keep: made again each time (the Row holds its own references) */
    if (sub) { Py_DECREF(k); k = pk; }
    *label = u, *key = k;
    return 2;  /* the caller releases both */
}

#define BENCH_TOOLS_MAX 4096  /* labels whose tool is kept (a file can print any number of labels) */

/* Block.note_row(label) of a block, read here: `if self.tool is None: self.tool = _row_tool(label, self.titled
 * and not self.rows)`, _row_tool's answer for the label kept (it reads nothing but its two arguments). The
 * rows kept here are the block's too (bench_flush appends them before Python looks). *named: whether the
 * block's tool is known after. 0, or -1 on error. */
static int bench_note_row(struct vllm_state *v, PyObject *block, PyObject *label, int *named) {
    PyObject *tool = GET_ATTR(block, "tool");
    if (!tool) return -1;
    int unknown = tool == Py_None;
    Py_DECREF(tool);
    if (!unknown) { *named = 1; return 0; }
    PyObject *titled = GET_ATTR(block, "titled");
    int first = titled ? PyObject_IsTrue(titled) : -1;
    Py_XDECREF(titled);
    if (first > 0 && v->npend) first = 0;
    else if (first > 0) {
        PyObject *rows = GET_ATTR(block, "rows");
        int some = rows ? PyObject_IsTrue(rows) : -1;
        Py_XDECREF(rows);
        first = some < 0 ? -1 : !some;
    }
    if (first < 0) return -1;
    PyObject *got = PyDict_GetItemWithError(v->tools[first], label);  /* borrowed */
    if (got) Py_INCREF(got);
    else if (PyErr_Occurred()) return -1;
    else {
        PyObject *argv[2] = {label, first ? Py_True : Py_False};
        if (!(got = PyObject_Vectorcall(v->row_tool, argv, 2, NULL))) return -1;
        if (PyDict_GET_SIZE(v->tools[first]) < BENCH_TOOLS_MAX && PyDict_SetItem(v->tools[first], label, got) < 0) {
            Py_DECREF(got);
            return -1;
        }
    }
    int bad = got != Py_None && SET_ATTR(block, "tool", got) < 0;
    *named = got != Py_None;
    Py_DECREF(got);
    return bad ? -1 : 0;
}

/* note_row(label) or note_section(header) of both blocks while their tool is unknown (Block.note_row:
 * the first telling label names it); once named, they are no longer called. 0, or -1 on error. */
static int bench_note(struct vllm_state *v, const char *method, PyObject *text) {
    if (!v->blocks[0]) return 0;
    int named = 1, row = !strcmp(method, "note_row");
    if (row && v->row_tool && PyUnicode_CheckExact(text)) {
        for (int i = 0; i < 2; i++) {
            int one;
            if (bench_note_row(v, v->blocks[i], text, &one) < 0) return -1;
            named &= one;
        }
    } else {
        if (bench_flush(v) < 0) return -1;  /* note_row reads the rows (Block.note_row's `first`) */
        PyObject *name = name_str(row ? "note_row" : "note_section");
        if (!name) return -1;
        for (int i = 0; i < 2; i++) {
            PyObject *got = PyObject_CallMethodOneArg(v->blocks[i], name, text);
            if (!got) return -1;
            Py_DECREF(got);
            PyObject *tool = GET_ATTR(v->blocks[i], "tool");
            if (!tool) return -1;
            named &= tool != Py_None;
            Py_DECREF(tool);
        }
    }
    if (named) for (int i = 0; i < 2; i++) Py_CLEAR(v->blocks[i]);
    return 0;
}

static inline char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c | 0x20) : c; }

/* s[0:n] equals p case-blind (p lower-case) */
static int same_lower(const char *s, Py_ssize_t n, const char *p) {
    Py_ssize_t k = (Py_ssize_t)strlen(p);
    if (n != k) return 0;
    for (Py_ssize_t i = 0; i < k; i++)
        if (lower(s[i]) != p[i]) return 0;
    return 1;
}

/* Both readers' `subsection` (BlockReader's own), set to `text`: 0, or -1 on error. */
static int bench_set_subsection(struct vllm_state *v, PyObject *text) {
    for (int i = 0; i < 2; i++)
        if (SET_ATTR(v->readers[i], "subsection", text) < 0) return -1;
    v->subsection = PyObject_IsTrue(text);
    return v->subsection < 0 ? -1 : 0;
}

/* A valueless row `Per-position acceptance (%):` (BlockReader._row with no value): the readers'
 * subsection, a Row of no value in both blocks. OK, PYTHON (no readers handed over, a label
 * serving.KEYS lacks) or ERROR. */
static int bench_subsection(Scanner *self, const char *s, Py_ssize_t n, int64_t lineno) {
    struct vllm_state *v = self->vllm;
    if (!v->readers[0]) return PYTHON;
    PyObject *label, *key;
    int known = bench_label(v, s, n, 0, &label, &key);
    if (known <= 0) return known < 0 ? ERROR : PYTHON;
    int bad = bench_note(v, "note_row", label) < 0 || bench_set_subsection(v, label) < 0
        || bench_push(v, lineno, label, key, ROW_NONE, 0, 0, NULL) < 0;
    if (known == 2) { Py_DECREF(label); Py_DECREF(key); }
    return bad ? ERROR : OK;
}

/* A `Label:   value` row of an open block (BlockReader._row with a value): OK or PYTHON, ERROR.
 * `lits`: the line's literals; a client literal (`request rate:`) or SGLang's `sglang` (the value
 * `sglang` alone: no launch command) is read here on a row only. */
static int bench_row(Scanner *self, const char *s, Py_ssize_t n, int64_t lineno, uint64_t lits) {
    struct vllm_state *v = self->vllm;
    Py_ssize_t i = 0;
    while (i < n && is_space(s[i])) i++;
    if (i >= n || !is_alpha(s[i])) return PYTHON;
    const char *c = memchr(s + i, ':', (size_t)(n - i));
    if (!c) return PYTHON;
    Py_ssize_t colon = c - s, le = colon;
    while (le > i && is_space(s[le - 1])) le--;
    for (Py_ssize_t k = i; k < le; k++)
        if (!label_char(s[k])) return PYTHON;
    /* `Position i` rows under a `Per-position acceptance` subsection are keyed by it */
    int position = le - i >= 9 && same_lower(s + i, 9, "position ");
    Py_ssize_t j = colon + 1;
    if (j < n && !is_space(s[j])) return PYTHON;  /* `:` glued to text */
    j = skip_pad(s, n, j);
    while (j < n && is_space(s[j])) j++;
    Py_ssize_t v0 = j;
    while (j < n && !is_space(s[j])) j++;
    Py_ssize_t v1 = j;
    while (j < n && is_space(s[j])) j++;
    if (v1 == v0)  /* no value: a subsection (`sglang` on it may be a launch command's: Python's) */
        return lits & v->sglang_lits ? PYTHON : bench_subsection(self, s + i, le - i, lineno);
    if (j < n) {  /* `(not set|\S+)\s*$`: `not set` is the one value of two words */
        if (!(v1 - v0 == 3 && memeq(s + v0, "not", 3) && s[v1] == ' ' && n - v1 >= 4 && memeq(s + v1 + 1, "set", 3)))
            return PYTHON;  /* two tokens: no row, the block ends */
        j = v1 + 4;
        if (j < n && !is_space(s[j])) return PYTHON;
        v1 = j;
        while (j < n && is_space(s[j])) j++;
        if (j < n) return PYTHON;
    }
    if (lits & v->sglang_lits) {  /* `sglang` as the value only: sglang.feed's _LAUNCH finds no command */
        if (find(s, v0, "sglang", 6) || !(v1 - v0 == 6 && memeq(s + v0, "sglang", 6))) return PYTHON;
    }
    PyObject *value = NULL;
    int kind = ROW_TEXT;
    long long iv = 0;
    double xv = 0;
    int got = bench_number(s + v0, v1 - v0, &kind, &iv, &xv);
    int none = 0;
    if (got == 0) {
        /* parse_value of a letter-led word: float() takes only inf, infinity and nan (not finite: the
         * text is kept), so the text, or None for nan, nan%, n/a, none (no row) */
        if (!is_alpha(s[v0])) return PYTHON;
        for (Py_ssize_t k = v0; k < v1; k++)
            if (s[k] < 0x20 || s[k] > 0x7e) return PYTHON;  /* (a space: `not set`'s) */
        const char *t = s + v0;
        Py_ssize_t tn = v1 - v0;
        none = same_lower(t, tn, "nan") || same_lower(t, tn, "nan%") || same_lower(t, tn, "n/a")
            || same_lower(t, tn, "none");
        if (!none && !(value = PyUnicode_DecodeASCII(t, tn, NULL))) return ERROR;
    }
    PyObject *label, *key;
    int known = bench_label(v, s + i, le - i, position && v->subsection, &label, &key);
    if (known <= 0) {
        Py_XDECREF(value);
        return known < 0 ? ERROR : PYTHON;
    }
    int bad = bench_note(v, "note_row", label) < 0;
    if (!bad && !none) {  /* (nan, n/a, none: no row) */
        bad = bench_push(v, lineno, label, key, kind, iv, xv, value) < 0;
        value = NULL;  /* (stolen) */
    }
    Py_XDECREF(value);
    if (known == 2) { Py_DECREF(label); Py_DECREF(key); }
    return bad ? ERROR : OK;
}

/* serving._SECTION, `^\s*-{3,}\s*([A-Za-z][^-]*(?:-[A-Za-z][^-]*)*?)\s*-{3,}\s*$`, on s[0:n]: 1 with the header
 * s[*h0:*h1], or 0 (no match, or one Python's regex should say). */
static int section_match(const char *s, Py_ssize_t n, Py_ssize_t *h0, Py_ssize_t *h1) {
    Py_ssize_t a = 0, e = n;
    while (a < n && is_space(s[a])) a++;
    Py_ssize_t d = a;
    while (d < n && s[d] == '-') d++;
    if (d - a < 3) return 0;
    while (d < n && is_space(s[d])) d++;
    if (d >= n || !is_alpha(s[d])) return 0;
    while (e > d && is_space(s[e - 1])) e--;
    Py_ssize_t t = e;
    while (t > d && s[t - 1] == '-') t--;
    if (e - t < 3) return 0;
    Py_ssize_t h = t;
    while (h > d && is_space(s[h - 1])) h--;
    for (Py_ssize_t k = d; k < h; k++)  /* a `-` in the header is followed by a letter */
        if (s[k] == '-' && (k + 1 >= h || !is_alpha(s[k + 1]))) return 0;
    *h0 = d, *h1 = h;
    return 1;
}

/* A section title, serving._SECTION (section_match) (BlockReader._section; note_section does nothing with
 * the tool known, the subsection is ""). */
static int bench_section(Scanner *self, const char *s, Py_ssize_t n) {
    struct vllm_state *v = self->vllm;
    Py_ssize_t d, h1;
    if (!section_match(s, n, &d, &h1)) return PYTHON;
    if (v->subsection && !v->readers[0]) return PYTHON;  /* a section closes the subsection */
    PyObject *header = PyUnicode_DecodeASCII(s + d, h1 - d, NULL);
    if (!header) return ERROR;
    /* BlockReader._section: the header joins, note_section, the subsection is "" */
    int bad = PyList_Append(v->sections[0], header) < 0 || PyList_Append(v->sections[1], header) < 0
        || bench_note(v, "note_section", header) < 0;
    if (!bad && v->subsection) {
        PyObject *empty = PyUnicode_FromStringAndSize("", 0);
        bad = !empty || bench_set_subsection(v, empty) < 0;
        Py_XDECREF(empty);
    }
    Py_DECREF(header);
    return bad ? ERROR : OK;
}

/* The Watcher's offer() of a line a format reader's literal or STARTS is on (`wanted`; 0: only the
 * Tagger's), as every format's lines are offered (context_offer, _scan_context.h): 0, or -1 on error. */
static int offer_line(struct vllm_state *v, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, int wanted) {
    return context_offer(v->ctx, v->offer, s, n, line, lineno, wanted);
}

/* fn(lineno, line), the line made a str from s[0:n] where the scan has none: its result, or NULL. */
static PyObject *call_line(PyObject *fn, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno) {
    PyObject *text = line ? (Py_INCREF(line), line) : PyUnicode_DecodeASCII(s, n, NULL);
    PyObject *ln = text ? PyLong_FromLongLong(lineno) : NULL;
    PyObject *got = NULL;
    if (ln) {
        PyObject *argv[2] = {ln, text};
        got = PyObject_Vectorcall(fn, argv, 2, NULL);
    }
    Py_XDECREF(ln);
    Py_XDECREF(text);
    return got;
}

/* Whether a `#` line may hold a word nccl_tests._comment acts on (a superset of its tests): busbw,
 * bandwidth, Out of, Collective, nThread, nccl-tests, Rank. One pass over the line, each place's byte
 * naming the words that may start there (a copied bench block's `#` rows are many: seven searches
 * of each were a line's dearest step). */
static int nccl_words(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i + 4 <= n; i++) {
        const char *t = s + i;
        Py_ssize_t left = n - i;
        switch (t[0]) {
        case 'b':
            if ((left >= 5 && memeq(t, "busbw", 5)) || (left >= 9 && memeq(t, "bandwidth", 9))) return 1;
            break;
        case 'O':
            if (left >= 6 && memeq(t, "Out of", 6)) return 1;
            break;
        case 'C':
            if (left >= 10 && memeq(t, "Collective", 10)) return 1;
            break;
        case 'n':
            if ((left >= 7 && memeq(t, "nThread", 7)) || (left >= 10 && memeq(t, "nccl-tests", 10))) return 1;
            break;
        case 'R':
            if (memeq(t, "Rank", 4)) return 1;
            break;
        default:
            break;
        }
    }
    return 0;
}

/* Whether BlockReader.feed closes an open block at b[0:bn] (the line past the block's mark), and
 * sglang.feed and vllm.feed do nothing more with it: the footer (`=` only, blanks around: not a row,
 * a section or blank), or a title (a new block opens), holding no literal but the title's and `---`.
 * (A line without the mark also closes a copied block: it is Python's, as any other line is.) */
static int closes_blocks(struct vllm_state *v, const char *b, Py_ssize_t bn, uint64_t lits) {
    if (!v->closer || lits & ~(v->title_lits | v->dash_lits)) return 0;
    if (lits & v->title_lits) return 1;
    Py_ssize_t i = 0, e = bn;
    while (i < bn && is_space(b[i])) i++;
    while (e > i && is_space(b[e - 1])) e--;
    if (i == e) return 0;
    for (Py_ssize_t k = i; k < e; k++)
        if (b[k] != '=') return 0;
    return 1;
}

/* A line of no other reader's that BlockReader.feed ends the open blocks at as it ends them at any line
 * that is no row, section or blank (`# Traffic request rate: inf` after an unmarked block): it leads with
 * neither a letter (_ROW) nor a dash (_SECTION) and holds no literal but the client's and `---` (the
 * readers do nothing more with it: their feed() acts on other literals). */
static int closes_inert(struct vllm_state *v, const char *b, Py_ssize_t bn, uint64_t lits) {
    if (!v->closer || v->prefix_len || lits & ~(v->client_lits | v->dash_lits)) return 0;
    Py_ssize_t i = 0;
    while (i < bn && is_space(b[i])) i++;
    return i < bn && !is_alpha(b[i]) && b[i] != '-';
}

/* serving._ROW matches b[0:n] (ASCII): `^\s*([A-Za-z][A-Za-z0-9 ()/%#.,\-]*?)\s*:(?:\s+(not set|\S+))?\s*$`.
 * The label holds no `:`, so its colon is the line's first; one token after it, or `not set`, or none. */
static int row_shape(const char *b, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n && is_space(b[i])) i++;
    if (i >= n || !is_alpha(b[i])) return 0;
    const char *c = memchr(b + i, ':', (size_t)(n - i));
    if (!c) return 0;
    Py_ssize_t colon = c - b, le = colon;
    while (le > i && is_space(b[le - 1])) le--;
    for (Py_ssize_t k = i; k < le; k++)
        if (!label_char(b[k])) return 0;
    Py_ssize_t j = colon + 1, w = j;
    while (j < n && is_space(b[j])) j++;
    if (j == n) return 1;  /* no value */
    if (j == w) return 0;  /* `:` glued to text */
    if (n - j >= 7 && memeq(b + j, "not set", 7)) {
        Py_ssize_t k = j + 7;
        while (k < n && is_space(b[k])) k++;
        if (k == n) return 1;
    }
    while (j < n && !is_space(b[j])) j++;
    while (j < n && is_space(b[j])) j++;
    return j == n;
}

/* A line BlockReader.feed ends the open blocks at and no more (not their mark's, or no title, row,
 * section or blank: a `non-default args` line after a block, a log line), that no reader before the two
 * bench ones acts on (no eagle_profile or SGLang literal: their records and settings would come before the
 * blocks') and that no BlockReader would read once its block is closed (none of its TRIGGERS, which are
 * SGLang's literals too, or STARTS), the Tagger's "main" known: the blocks closed here (bench_close_here),
 * it is read on as with none open (read_line, BENCH_CLOSED). */
static int closes_before(Scanner *self, const char *s, Py_ssize_t n, int flags, unsigned by_literal,
                         unsigned by_start) {
    struct vllm_state *v = self->vllm;
    if (!(flags & F_MAIN) || !v->emit || by_literal & (BIT(R_EAGLE) | BIT(R_SGLANG))
        || by_start & (BIT(R_SGLANG) | BIT(R_VLLM)))
        return 0;
    if (v->prefix_len) {
        if (n < v->prefix_need || !memeq(s, v->prefix, (size_t)v->prefix_need)) return 1;  /* the copy ended */
        Py_ssize_t k = v->prefix_len < n ? v->prefix_len : n;
        s += k, n -= k;
    }
    return !blank_line(s, n) && !row_shape(s, n);  /* (no `---`: no section; no title) */
}

/* A line that closes the open blocks (closes_blocks, closes_inert): closed and the owner's records written
 * here where that is plain (bench_close_here, _scan_bench.h), else native._Parse.bench_close feeds it to
 * the two bench readers (their blocks' records are written, a title opens new ones), stamps the records
 * and hands them to the scanner's columns (ready()), and gives the flags the scan reads on with (arm(): the
 * new blocks handed over by bench(), or none open); then the Watcher's offer, as after the readers. */
static int bench_close(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, unsigned mask,
                       int title, int flags) {
    struct vllm_state *v = self->vllm;
    int here = bench_close_here(self, s, n, line, lineno, title, flags);
    if (here < 0) return ERROR;
    if (!here) {
        if (bench_flush(v) < 0) return ERROR;  /* the readers close blocks holding every row */
        PyObject *got = call_line(v->closer, s, n, line, lineno);
        if (!got) return ERROR;
        long next = PyLong_AsLong(got);
        Py_DECREF(got);
        if (next == -1 && PyErr_Occurred()) return ERROR;
        if (next < 0 || next > INT_MAX) {
            PyErr_SetString(PyExc_ValueError, "bench_close gives the scan's flags");
            return ERROR;
        }
        v->next_flags = (int)next, v->reflag = 1, v->armed_here = 0;
        if (!(next & F_BENCH))  /* no block open: the closed ones let go, as bench(None) */
            for (int i = 0; i < 2; i++) {
                Py_CLEAR(v->rows[i]); Py_CLEAR(v->sections[i]); Py_CLEAR(v->blocks[i]); Py_CLEAR(v->readers[i]);
            }
    }
    if (mask && offer_line(v, s, n, line, lineno, (mask & ~BIT(R_TAGGER)) != 0) < 0) return ERROR;
    return OK;
}

/* What bench_line_read's tests of a whole line give: the readers' STARTS (starts_of), whether nccl_tests'
 * words (nccl_words; read where its STARTS are on the line) or a `=` (launch_env's) are on it. */
typedef struct { unsigned by_start; int words, eq; } RowHead;

/* Whether c may follow a number row's `:` (blanks, a number's characters): no letter, `:`, `=`, `@`,
 * bracket, `$`, `#` or newline. */
static inline int row_tail_char(char c) { return CLASS[(unsigned char)c] & C_TAIL; }

/* RowHead of a line, kept for a number row (`Label:   12.5`) by its head s[0:colon + 1] (its mark, label and the
 * first `:`) where all after that colon is row_tail_char's: no pattern those tests look for holds a `:`, and
 * each needs a letter or one of the characters that tail lacks, so a match lies in the head or nowhere, and the
 * rows of a label, block after block, give the same (a `(`-led head whose tag runs on reaches the line's end
 * whatever the tail: no `)`, `[` or newline in it). Others are tested whole. */
static void row_head(struct vllm_state *v, const char *s, Py_ssize_t n, RowHead *h) {
    const char *c = n ? memchr(s, ':', (size_t)n) : NULL;
    Py_ssize_t head = c ? c - s + 1 : 0;
    int keep = c && head <= ROW_HEAD_MAX;
    for (Py_ssize_t k = keep ? skip_pad(s, n, head) : n; k < n && keep; k++) keep = row_tail_char(s[k]);
    unsigned slot = 0;
    if (keep) {
        slot = label_hash(s, head) & (ROW_HEADS - 1);
        if (v->heads[slot].len == head && memeq(v->heads[slot].text, s, (size_t)head)) {
            h->by_start = v->heads[slot].by_start, h->words = v->heads[slot].words, h->eq = v->heads[slot].eq;
            return;
        }
    }
    h->by_start = starts_of(s, n);  /* (the other two are read only where these readers' STARTS are on it) */
    h->words = h->by_start & BIT(R_NCCL_TESTS) ? nccl_words(s, n) : 0;
    h->eq = h->by_start & BIT(R_LAUNCH_ENV) ? memchr(s, '=', (size_t)n) != NULL : 0;
    if (keep) {
        memcpy(v->heads[slot].text, s, (size_t)head);
        v->heads[slot].len = head;
        v->heads[slot].by_start = h->by_start, v->heads[slot].words = (unsigned char)h->words;
        v->heads[slot].eq = (unsigned char)h->eq;
    }
}

/* A line while both bench blocks are open (F_BENCH): what the Tagger, both BlockReaders,
 * launch_env, nccl_tests and the Watcher would do with it, or PYTHON. */
static int bench_line_read(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, Eagle *e, int flags,
                           int64_t lineno, unsigned *mask, uint64_t lits, unsigned by_literal) {
    struct vllm_state *v = self->vllm;
    if (!v) {
        *mask = by_literal | starts_of(s, n);
        return PYTHON;
    }
    RowHead head;
    row_head(v, s, n, &head);
    unsigned by_start = head.by_start;
    *mask = by_literal | by_start;
    if (!v->rows[0] || !v->rows[1] || e->in_block) return PYTHON;
    /* Readers fed besides the two busy ones: none by a literal (the bench readers' `---` aside) */
    if (by_literal & ~(BIT(R_SGLANG) | BIT(R_VLLM)) || (lits & ~(v->dash_lits | v->client_lits | v->sglang_lits
                                                                   | v->title_lits)))
        return PYTHON;
    if (by_start & ~(BIT(R_TAGGER) | BIT(R_NCCL_TESTS) | BIT(R_LAUNCH_ENV) | BIT(R_SGLANG) | BIT(R_VLLM)))
        return PYTHON;
    int blank = blank_line(s, n);
    int label;
    if (n && s[0] == '[') return PYTHON;  /* a label the Tagger may know: read_line's */
    int tag = tagger_tag(self, s, n, NULL, &label);  /* no labels read past a `[` */
    if (tag != TAG_MAIN) return tag < 0 ? ERROR : PYTHON;
    if (!blank && !(flags & F_MAIN)) return PYTHON;  /* the Tagger makes "main" of it */
    /* launch_env: an assignment needs a `=` */
    if (by_start & BIT(R_LAUNCH_ENV) && head.eq) return PYTHON;
    if (by_start & BIT(R_NCCL_TESTS)) {  /* only a `#` comment that names none of _comment's words */
        Py_ssize_t i = 0;
        while (i < n && is_blank(s[i])) i++;
        if (!v->nccl_idle || i >= n || s[i] != '#' || head.words) return PYTHON;
    }
    const char *b = s;
    Py_ssize_t bn = n;
    if (v->prefix_len) {  /* BlockReader.feed: a copied block's lines carry its mark */
        if (n < v->prefix_need || !memeq(s, v->prefix, (size_t)v->prefix_need)) return PYTHON;
        Py_ssize_t k = v->prefix_len < n ? v->prefix_len : n;
        b = s + k, bn = n - k;
    }
    int r;
    if (closes_blocks(v, b, bn, lits) || closes_inert(v, b, bn, lits))
        return bench_close(self, s, n, line, lineno, *mask, (lits & v->title_lits) != 0, flags);
    if (lits & v->title_lits) return PYTHON;
    if (blank_line(b, bn))
        r = OK;
    else if ((r = bench_row(self, b, bn, lineno, lits)) == PYTHON && by_literal && !(lits & (v->client_lits | v->sglang_lits)))
        r = bench_section(self, b, bn);
    if (r != OK) return r;
    /* offered after the readers, as the engines do */
    if (*mask && offer_line(v, s, n, line, lineno, (*mask & ~BIT(R_TAGGER)) != 0) < 0) return ERROR;
    return OK;
}

/* bench_line_read, and a line it hands back that closes the blocks before other readers read it
 * (closes_before): the blocks closed here, BENCH_CLOSED (read_line reads the line on). */
static int bench_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, Eagle *e, int flags,
                      int64_t lineno, unsigned *mask, uint64_t lits, unsigned by_literal) {
    int r = bench_line_read(self, s, n, line, e, flags, lineno, mask, lits, by_literal);
    if (r != PYTHON || !self->vllm || e->in_block
        || !closes_before(self, s, n, flags, by_literal, starts_of(s, n)))
        return r;
    int here = bench_close_here(self, s, n, line, lineno, 0, flags);
    return here < 0 ? ERROR : here ? BENCH_CLOSED : PYTHON;
}


/* A list attribute of a block or the result (a new reference), or NULL with the error set. */
static PyObject *block_list(PyObject *block, const char *name) {
    PyObject *x = get_named(block, name);
    if (x && !PyList_CheckExact(x)) {
        Py_DECREF(x);
        PyErr_Format(PyExc_TypeError, "%s must be a list", name);
        return NULL;
    }
    return x;
}

/* serving.Block(lineno, titled=titled, prefix=mark, client=client) made as its dataclass __init__ makes it, its rows
 * and sections lists also in lists[0..1] (new references) (native.py
 * hands Block over only when that __init__ is the generated one over BLOCK_FIELDS with their defaults, no
 * __post_init__: _block_plain): object.__new__, then each field stored in order, no Python frame a title
 * (a sweep's thousands of titles each made two). The block (a new reference), or NULL. */
static PyObject *bench_block_new(struct vllm_state *v, PyObject *ln, int titled, PyObject *mark, PyObject *client,
                                 PyObject **lists) {
    PyTypeObject *t = (PyTypeObject *)v->block_type;
    PyObject *none = PyTuple_New(0);
    PyObject *block = none ? PyBaseObject_Type.tp_new(t, none, NULL) : NULL;
    Py_XDECREF(none);
    if (!block) return NULL;
    PyObject *rows = PyList_New(0), *sections = PyList_New(0), *prefix = mark;
    int bad = !rows || !sections || SET_ATTR(block, "first_line", ln) < 0 || SET_ATTR(block, "titled", titled ? Py_True : Py_False) < 0
        || SET_ATTR(block, "tool", Py_None) < 0 || SET_ATTR(block, "rows", rows) < 0
        || SET_ATTR(block, "sections", sections) < 0 || SET_ATTR(block, "prefix", prefix) < 0
        || SET_ATTR(block, "client", client) < 0;
    if (bad) {
        Py_XDECREF(rows);
        Py_XDECREF(sections);
        Py_CLEAR(block);
    } else {
        lists[0] = rows, lists[1] = sections;
    }
    return block;
}

/* BlockReader.open_title(lineno, line) of a reader, its Block made as serving.Block's __init__ makes it
 * (bench_block_new; at a title its rows and sections lists in lists[0..1], new references, else NULL): `_open` (a Block of the reader's client, the reader's client and subsection new) then
 * `titled` and the `prefix` _PREFIX reads off the line (`mark`, bench_open's). Or, `header` not NULL,
 * BlockReader.open_section at a section title: `_open` (untitled, no prefix: `mark` "") then `_section` (the
 * header joins the sections, note_section, the subsection ""). The block (a new reference), or NULL. */
static PyObject *bench_open_title(struct vllm_state *v, PyObject *reader, PyObject *ln, PyObject *mark,
                                  PyObject *header, PyObject **lists) {
    PyObject *client = GET_ATTR(reader, "client");
    PyObject *block = client ? bench_block_new(v, ln, header == NULL, mark, client, lists) : NULL;
    Py_XDECREF(client);
    PyObject *fresh = block ? PyDict_New() : NULL;
    PyObject *empty = fresh ? PyUnicode_FromStringAndSize("", 0) : NULL;
    int bad = !empty || SET_ATTR(reader, "block", block) < 0 || SET_ATTR(reader, "client", fresh) < 0
        || SET_ATTR(reader, "subsection", empty) < 0;
    if (!bad && header) {
        PyObject *sections = GET_ATTR(block, "sections");
        PyObject *got = sections && PyList_Append(sections, header) == 0
            ? PyObject_CallMethodOneArg(block, NAME("note_section"), header) : NULL;
        bad = !got || SET_ATTR(reader, "subsection", empty) < 0;
        Py_XDECREF(got);
        Py_XDECREF(sections);
    }
    Py_XDECREF(fresh);
    Py_XDECREF(empty);
    if (bad) Py_CLEAR(block);
    if (block && header) {  /* note_section ran: bench_open reads the block again */
        Py_CLEAR(lists[0]);
        Py_CLEAR(lists[1]);
    }
    if (!block && lists[0]) {  /* (made, then an error) */
        Py_CLEAR(lists[0]);
        Py_CLEAR(lists[1]);
    }
    return block;
}

/* The readers' open_title (a title) or open_section (a `---` line: a block only at a section title), SGLang's
 * first, and the blocks opened handed over as arm() would (tool unknown, no subsection, the prefix _PREFIX
 * gives); the scan reads on in F_BENCH (armed_here; native.py sees the blocks open after the scan). 0, or -1
 * on error. */
static int bench_open(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, int title) {
    struct vllm_state *v = self->vllm;
    if (!title) {  /* serving._SECTION wants a letter between the dashes: a rule of none opens no block */
        Py_ssize_t k = 0;
        while (k < n && !is_alpha(s[k])) k++;
        if (k == n) return 0;
    }
    /* serving._PREFIX, `^([#>][ \t]?)=` */
    Py_ssize_t plen = 0;
    if (n > 0 && (s[0] == '#' || s[0] == '>')) {
        plen = n > 1 && (s[1] == ' ' || s[1] == '\t') ? 2 : 1;
        if (plen >= n || s[plen] != '=') plen = 0;
    }
    /* open_title's or open_section's work done here (bench_open_title), a section's where its title is plain
     * (an odd one, or none: open_section says) */
    Py_ssize_t h0 = 0, h1 = 0;
    int here = v->block_type && (title || section_match(s, n, &h0, &h1));
    PyObject *header = here && !title ? PyUnicode_DecodeASCII(s + h0, h1 - h0, NULL) : NULL;
    PyObject *text = here ? NULL : line ? (Py_INCREF(line), line) : PyUnicode_DecodeASCII(s, n, NULL);
    PyObject *ln = text || (here && (title || header)) ? PyLong_FromLongLong(lineno) : NULL;
    PyObject *name = ln ? name_str(title ? "open_title" : "open_section") : NULL;  /* (borrowed) */
    PyObject *mark = name && here ? PyUnicode_DecodeASCII(s, title ? plen : 0, NULL) : NULL;
    PyObject *blocks[2] = {NULL, NULL}, *rows[2] = {NULL, NULL}, *sections[2] = {NULL, NULL};
    int bad = !name || (here && !mark), opened = 0, known = 0;
    for (int i = 0; i < 2 && !bad; i++) {  /* SGLang's reader first, as the engines feed them */
        PyObject *argv[3] = {v->openers[i], ln, text}, *lists[2] = {NULL, NULL};
        blocks[i] = here ? bench_open_title(v, v->openers[i], ln, mark, header, lists)
                         : PyObject_VectorcallMethod(name, argv, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (!blocks[i]) { bad = 1; break; }
        if (blocks[i] == Py_None) continue;  /* open_section: no section title, no block */
        opened |= 1 << i;
        if (lists[0]) {  /* a title's block made here, no Python run since: its tool None, its lists these */
            rows[i] = lists[0], sections[i] = lists[1];
            continue;
        }
        PyObject *tool = GET_ATTR(blocks[i], "tool");  /* a section may name it (note_section) */
        known |= (tool && tool != Py_None) << i;
        bad = !tool || !(rows[i] = block_list(blocks[i], "rows")) || !(sections[i] = block_list(blocks[i], "sections"));
        Py_XDECREF(tool);
    }
    Py_XDECREF(ln);
    Py_XDECREF(text);
    Py_XDECREF(mark);
    Py_XDECREF(header);
    if (!bad && (opened == 1 || opened == 2 || known == 1 || known == 2)) {  /* the same line, the same outcome */
        PyErr_SetString(PyExc_RuntimeError, "the bench readers opened different blocks at one line");
        bad = 1;
    }
    if (!bad && !opened) {
        for (int i = 0; i < 2; i++) Py_DECREF(blocks[i]);
    } else if (!bad) {
        for (int i = 0; i < 2; i++) {
            Py_XSETREF(v->rows[i], rows[i]);
            Py_XSETREF(v->sections[i], sections[i]);
            if (known) Py_CLEAR(blocks[i]);  /* note_row is called only while the tool is unknown */
            Py_XSETREF(v->blocks[i], blocks[i]);
            Py_INCREF(v->openers[i]);
            Py_XSETREF(v->readers[i], v->openers[i]);
        }
        if (!title) plen = 0;  /* a block a section opens has no mark */
        memcpy(v->prefix, s, (size_t)plen);
        v->prefix_len = v->prefix_need = plen;
        while (v->prefix_need > 0 && is_space(v->prefix[v->prefix_need - 1])) v->prefix_need--;
        v->subsection = 0;
        v->nccl_idle = bench_tests_idle(self);
        v->armed_here = 1;
    } else {
        for (int i = 0; i < 2; i++) { Py_XDECREF(blocks[i]); Py_XDECREF(rows[i]); Py_XDECREF(sections[i]); }
        return -1;
    }
    return 0;
}

/* A `Serving Benchmark Result` title with no reader busy (the scan's flags lack F_BENCH): BlockReader.feed
 * opens a titled block in both bench readers (open_title), or a `---` line: open_section opens a block at
 * a section title (which may name the tool), else nothing; and nothing else reads it, when the line holds
 * no literal but the title (or `---`), no reader's STARTS but a `#` comment's that the Tagger and nccl_tests
 * do nothing with (bench_hash_idle, _scan_bench.h), and is main's with eagle_profile outside a block (as
 * bench_line asks). The blocks are opened by the readers' own open_title (bench_open). OK, ERROR, or
 * DECLINE (read_line reads it as before). */
static int bench_title(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, Eagle *e, int flags,
                       int64_t lineno, unsigned *mask, uint64_t lits) {
    struct vllm_state *v = self->vllm;
    if (!v || !v->openers[0] || !v->row_type || !lits || e->in_block || !(flags & F_MAIN) || v->offer == NULL
        || (n && s[0] == '['))
        return DECLINE;
    /* a title, or a `---` line (BlockReader.feed's branch for it: a section title opens a block) */
    int title = !(lits & ~v->title_lits);
    if (!title && (lits & ~v->dash_lits)) return DECLINE;
    int label;
    int tag = tagger_tag(self, s, n, NULL, &label);
    if (tag != TAG_MAIN) return tag < 0 ? ERROR : DECLINE;
    if (bench_open(self, s, n, line, lineno, title) < 0) return ERROR;
    /* offered after the readers, as the engines do */
    if (*mask && offer_line(v, s, n, line, lineno, (*mask & ~BIT(R_TAGGER)) != 0) < 0) return ERROR;
    return OK;
}

/* The flags of the lines after one read: those bench_close got, and F_BENCH when bench_title has opened
 * the bench blocks in this scan. */
static inline int bench_flags(Scanner *self, int flags) {
    struct vllm_state *v = self->vllm;
    if (!v) return flags;
    if (v->reflag) v->reflag = 0, flags = v->next_flags;
    return v->armed_here ? flags | F_BENCH : flags;
}


enum { SK_RATE, SK_EFFICIENCY, SK_K, SK_ACCEPTED, SK_DRAFTED, SK_EMITTED, SK_MEAN, SK_ACCEPTED_TPS, SK_DRAFTED_TPS,
       SK_POSITIONS, SK_COUNT };
static const char *SPEC_IDS[] = {"rate", "efficiency", "k", "accepted", "drafted", "emitted", "mean_len",
                                 "accepted_tps", "drafted_tps", "positions"};
static const char *SPEC_METRICS[] = {"draft_acceptance_rate", "accepted_tokens", "draft_tokens",
                                     "accepted_throughput_tok_s", "drafted_throughput_tok_s", "accept_len_raw",
                                     "tokens_per_cycle", "emitted_tokens", "system_efficiency"};
#define SPEC_POSITIONS 16

/* vllm._SPEC_KEYS (label -> field) into the table, and the names of the records. */
static int spec_load(Scanner *self, VllmLines *l, PyObject *keys) {
    l->nspec_key = 0;
    for (int i = 0; i < SPEC_SEEN; i++) l->spec_seen[i].len = 0;  /* (their ids were the old table's) */
    Py_ssize_t pos = 0;
    PyObject *key, *name;
    while (PyDict_Next(keys, &pos, &key, &name)) {
        Py_ssize_t kl, nl;
        const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &kl) : NULL;
        const char *nm = k && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &nl) : NULL;
        if (!nm) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "spec keys map str to str");
            return -1;
        }
        int id = -1;
        for (int i = 0; i < SK_COUNT; i++)
            if (strcmp(nm, SPEC_IDS[i]) == 0) id = i;
        if (id < 0 || kl >= (Py_ssize_t)sizeof(l->spec_key[0].key) || l->nspec_key == 24) {
            PyErr_Format(PyExc_ValueError, "spec key %R: a field _scan_vllm.h knows, 24 keys at most", key);
            return -1;
        }
        memcpy(l->spec_key[l->nspec_key].key, k, (size_t)kl);
        l->spec_key[l->nspec_key].len = kl;
        l->spec_key[l->nspec_key].id = id;
        l->nspec_key++;
    }
    if ((l->s_spec = intern_str(self, "vllm_spec", 9)) < 0) return -1;
    for (int i = 0; i < 9; i++)
        if ((l->s_spec_names[i] = intern_str(self, SPEC_METRICS[i], (Py_ssize_t)strlen(SPEC_METRICS[i]))) < 0) return -1;
    for (int i = 0; i < SPEC_POSITIONS; i++) {
        char buf[32];
        int k = snprintf(buf, sizeof(buf), "acceptance_pos_%d", i + 1);
        if ((l->s_pos[i] = intern_str(self, buf, k)) < 0) return -1;
    }
    return 0;
}

/* vllm._STAGE_PHASES: the fields of a V0 `SpecDecodeWorker stage times:` line read, their phases */
static const char *STAGE_KEYS[] = {"average_time_per_proposal_tok", "scoring_time", "verification_time",
                                   "prefill_sync_time"};
static const char *STAGE_PHASES[] = {"proposal", "scoring", "verification", "prefill sync", "proposal per token"};

/* vllm.Parser._stage's fields of the body b[0:n] (after `SpecDecodeWorker stage times:\s*`), an
 * ASCII line's: _STAGE_FIELD.findall, `(\w+?)_ms=(\d+(?:\.\d+)?)`, kept where the key is a phase's,
 * in the order a dict keeps them (the first time a key is met; a later one's value wins). A key runs
 * to the `_ms=` that ends a word: `_ms` are word characters and `=` is not, so the word's end is the
 * lazy key's one stop, and a word without it matches nowhere in it. *count fields, key[i] its index
 * in STAGE_KEYS; 1, or 0 for a value this does not read (longer than 40: Python's). */
static int stage_fields(const char *b, Py_ssize_t n, int *key, double *ms, int *count) {
    *count = 0;
    Py_ssize_t p = 0;
    while (p < n) {
        if (!is_word(b[p])) { p++; continue; }
        Py_ssize_t r = p;
        while (r < n && is_word(b[r])) r++;
        if (!(r - p >= 4 && memeq(b + r - 3, "_ms", 3) && r + 1 < n && b[r] == '=' && is_digit(b[r + 1]))) {
            p = r;
            continue;
        }
        Py_ssize_t e = r + 1;
        while (e < n && is_digit(b[e])) e++;
        if (e + 1 < n && b[e] == '.' && is_digit(b[e + 1])) {
            e++;
            while (e < n && is_digit(b[e])) e++;
        }
        if (e - (r + 1) > 40) return 0;
        Py_ssize_t kl = r - 3 - p;
        for (int k = 0; k < 4; k++) {
            if ((Py_ssize_t)strlen(STAGE_KEYS[k]) != kl || !memeq(b + p, STAGE_KEYS[k], (size_t)kl)) continue;
            double x = to_double(b + r + 1, e - (r + 1));
            int at = 0;
            while (at < *count && key[at] != k) at++;
            if (at == *count) key[(*count)++] = k;
            ms[at] = x;  /* (a decimal of 40 digits at most: finite) */
        }
        p = e;
    }
    return 1;
}

/* launch_env.Parser.feed does nothing with an untagged line holding no `NCCL_`, no prompt (no `@`,
 * `$` or `+`) and, stripped, no _START: no `export`/`declare`/`env` first and no `NAME=` (a word
 * of [A-Za-z0-9_] then `=`: the run takes all it can, `=` is not in it). A `(` first is no
 * assignment's. (launch_env_idle with the `=` of a `key_ms=3.2` field allowed past the first word.) */
static int launch_env_idle_start(const char *s, Py_ssize_t n) {
    if (memchr(s, '@', (size_t)n) || memchr(s, '$', (size_t)n) || memchr(s, '+', (size_t)n)) return 0;
    Py_ssize_t i = 0;
    while (i < n && is_space(s[i])) i++;
    if (i < n && s[i] == '(') return 1;
    if (starts(s + i, n - i, "export") || starts(s + i, n - i, "declare") || starts(s + i, n - i, "env")) return 0;
    if (i < n && (is_alpha(s[i]) || s[i] == '_')) {
        while (i < n && is_word(s[i])) i++;
        if (i < n && s[i] == '=') return 0;
    }
    return 1;
}

/* vllm_arm(parser, launch_lines, processes, engine_fields, spec_keys, launchers, workers, hints, offer):
 * once a parse, before its first scan (native.parse_chunks). hints: the Tagger's (launcher,
 * worker); offer: result.offer or None. */
static PyObject *Scanner_vllm_arm(Scanner *self, PyObject *args) {
    if (not_ready(self)) return NULL;
    PyObject *parser, *windows, *launch_lines, *processes, *fields, *spec_keys, *launchers, *workers, *launcher,
        *worker, *offer;
    if (!PyArg_ParseTuple(args, "OO!O!O!O!O!O!(UU)O", &parser, &PyList_Type, &launch_lines, &PyDict_Type, &processes,
                          &PyDict_Type, &fields, &PyDict_Type, &spec_keys, &PyFrozenSet_Type, &launchers,
                          &PyFrozenSet_Type, &workers, &launcher, &worker, &offer)) return NULL;
    if (offer != Py_None && !PyCallable_Check(offer)) {
        PyErr_SetString(PyExc_TypeError, "offer must be callable or None");
        return NULL;
    }
    struct vllm_state *v = vllm_state_of(self);
    if (!v) return NULL;
    VllmLines *l = &v->lines;
    vllm_lines_release(l);
    if (spec_load(self, l, spec_keys) < 0) return NULL;
    if (PyDict_GET_SIZE(fields) > ENGINE_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "too many engine fields");
        return NULL;
    }
    l->nfield = 0;
    Py_ssize_t pos = 0;
    PyObject *key, *name;
    while (PyDict_Next(fields, &pos, &key, &name)) {
        Py_ssize_t kl, nl;
        const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8AndSize(key, &kl) : NULL;
        const char *nm = k && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &nl) : NULL;
        if (!nm) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "engine fields map str to str");
            return NULL;
        }
        if (kl >= (Py_ssize_t)sizeof(l->field[0].key)) {
            PyErr_SetString(PyExc_ValueError, "an engine field key is too long");
            return NULL;
        }
        int metric = intern_str(self, nm, nl);
        if (metric < 0) return NULL;
        memcpy(l->field[l->nfield].key, k, (size_t)kl);
        l->field[l->nfield].len = kl;
        l->field[l->nfield].metric = metric;
        l->nfield++;
    }
    for (int i = 0; i < 5; i++)
        if ((l->s_phases[i] = intern_str(self, STAGE_PHASES[i], (Py_ssize_t)strlen(STAGE_PHASES[i]))) < 0) return NULL;
    if ((l->s_stage = intern_str(self, "vllm_stage_times", 16)) < 0
        || (l->s_source = intern_str(self, "vllm_engine", 11)) < 0
        || (l->s_prompt = intern_str(self, "prompt_throughput_tok_s", 23)) < 0) return NULL;
    l->k_label = PyUnicode_InternFromString("label");
    l->k_rank = PyUnicode_InternFromString("rank");
    l->k_hints = PyUnicode_InternFromString("hints");
    l->k_pid = PyUnicode_InternFromString("pid");
    if (!l->k_label || !l->k_rank || !l->k_hints || !l->k_pid) { vllm_lines_release(l); return NULL; }
    windows = GET_ATTR(parser, "engine_windows");  /* a new reference, held below */
    if (!windows) { vllm_lines_release(l); return NULL; }
    if (!PyDict_CheckExact(windows)) {
        Py_DECREF(windows);
        vllm_lines_release(l);
        PyErr_SetString(PyExc_TypeError, "engine_windows must be a dict");
        return NULL;
    }
    PyObject *keep[] = {parser, launch_lines, processes, launchers, workers, launcher, worker};
    for (size_t i = 0; i < sizeof(keep) / sizeof(*keep); i++) Py_INCREF(keep[i]);
    l->parser = parser;
    l->windows = windows, l->launch_lines = launch_lines, l->processes = processes;
    l->launchers = launchers, l->workers = workers;
    l->hint[NAME_LAUNCHER] = launcher, l->hint[NAME_WORKER] = worker;
    Py_INCREF(offer);
    Py_XSETREF(v->offer, offer);
    l->armed = 1;
    Py_RETURN_NONE;
}

/* processes._VLLM at s[0]: `^\((\w+?)(?:_\d+)?(?: rank=(\d+))?(?: (TP\d+))? pid=(\d+)\)`. The end
 * (past `)`), 0 when the line is not so; the name, whether a rank or TP was named, the pid. */
static Py_ssize_t vllm_tag(const char *s, Py_ssize_t n, Py_ssize_t *name_len, int *ranked, Py_ssize_t *pid0,
                           Py_ssize_t *pid1) {
    if (n < 2 || s[0] != '(') return 0;
    Py_ssize_t i = 1;
    while (i < n && is_word(s[i])) i++;
    Py_ssize_t w = i - 1;
    if (w == 0) return 0;
    /* \w+? then (?:_\d+)?: the name ends at the last `_` of the word when digits alone follow it */
    *name_len = w;
    Py_ssize_t us = i - 1;
    while (us > 1 && is_digit(s[us])) us--;
    if (us > 1 && s[us] == '_' && us < i - 1) *name_len = us - 1;
    *ranked = 0;
    if (i + 6 < n && memeq(s + i, " rank=", 6) && is_digit(s[i + 6])) {
        i += 6;
        while (i < n && is_digit(s[i])) i++;
        *ranked = 1;
    }
    if (i + 3 < n && memeq(s + i, " TP", 3) && is_digit(s[i + 3])) {
        i += 3;
        while (i < n && is_digit(s[i])) i++;
        *ranked = 1;
    }
    if (!(i + 5 < n && memeq(s + i, " pid=", 5) && is_digit(s[i + 5]))) return 0;
    i += 5;
    *pid0 = i;
    while (i < n && is_digit(s[i])) i++;
    *pid1 = i;
    if (i >= n || s[i] != ')') return 0;
    return i + 1;
}

/* Whether the Tagger knows the tag's process with every field this line would set already set
 * (Tagger._tag on a `(Name pid=N)` line): 1 (*kind: the name's NAME_*), 0, -1 on error. The last
 * tag's text is kept with its process tag and name; the process is looked at every line. */
static int vllm_known(Scanner *self, VllmLines *l, const char *s, Py_ssize_t end, Py_ssize_t name_len, int ranked,
                      Py_ssize_t pid0, Py_ssize_t pid1) {
    if (pid1 - pid0 > 18) return 0;  /* read_int's bound (MAX_INT_DIGITS is more): Python's */
    if (!(l->tag && l->tag_len == end && memeq(l->tag_text, s, (size_t)end))) {
        Py_CLEAR(l->tag);
        l->tag_len = 0;
        if (end > TAG_MAX) return 0;
        for (int i = 0; i < TAG_KEPT && !l->tag; i++)
            if (l->tags[i].tag && l->tags[i].len == end && memeq(l->tags[i].text, s, (size_t)end)) {
                l->tag = Py_NewRef(l->tags[i].tag);
                l->tag_idx = l->tags[i].idx, l->tag_kind = l->tags[i].kind, l->tag_ranked = l->tags[i].ranked;
                l->tag_pid = l->tags[i].pid;
                memcpy(l->tag_text, s, (size_t)end);
                l->tag_len = end;
            }
    }
    if (!l->tag) {
        char buf[TAG_MAX + 8];
        int k = snprintf(buf, sizeof(buf), "pid %.*s", (int)(pid1 - pid0), s + pid0);
        if (k < 0 || k >= (int)sizeof(buf)) return 0;
        PyObject *name = PyUnicode_DecodeASCII(s + 1, name_len, NULL);
        if (!name) return -1;
        int launcher = PySet_Contains(l->launchers, name);
        int worker = launcher == 0 ? PySet_Contains(l->workers, name) : 0;
        Py_DECREF(name);
        if (launcher < 0 || worker < 0) return -1;
        if ((l->tag_idx = intern_str(self, buf, k)) < 0) return -1;
        l->tag = PyUnicode_DecodeASCII(buf, k, NULL);
        if (!l->tag) return -1;
        long long pid = 0;
        for (Py_ssize_t i = pid0; i < pid1; i++) pid = pid * 10 + (s[i] - '0');
        l->tag_pid = pid, l->tag_kind = launcher ? NAME_LAUNCHER : worker ? NAME_WORKER : NAME_OTHER;
        l->tag_ranked = ranked;
        memcpy(l->tag_text, s, (size_t)end);
        l->tag_len = end;
        int slot = l->tag_next;  /* kept, the oldest let go */
        l->tag_next = (slot + 1) % TAG_KEPT;
        Py_XSETREF(l->tags[slot].tag, Py_NewRef(l->tag));
        memcpy(l->tags[slot].text, s, (size_t)end);
        l->tags[slot].len = end, l->tags[slot].idx = l->tag_idx, l->tags[slot].kind = l->tag_kind;
        l->tags[slot].ranked = l->tag_ranked, l->tags[slot].pid = l->tag_pid;
    }
    PyObject *p = PyDict_GetItemWithError(l->processes, l->tag);
    if (!p) return PyErr_Occurred() ? -1 : 0;
    if (!PyDict_CheckExact(p)) return 0;
    PyObject *label = PyDict_GetItemWithError(p, l->k_label);
    PyObject *pid = label ? PyDict_GetItemWithError(p, l->k_pid) : NULL;
    if (!pid) return PyErr_Occurred() ? -1 : 0;
    int has_label = PyObject_IsTrue(label);
    if (has_label <= 0 || !PyLong_CheckExact(pid)) return has_label < 0 ? -1 : 0;
    int overflow;
    long long have = PyLong_AsLongLongAndOverflow(pid, &overflow);
    if (have == -1 && PyErr_Occurred()) return -1;
    if (overflow || have != l->tag_pid) return 0;
    if (l->tag_ranked) {
        PyObject *rank = PyDict_GetItemWithError(p, l->k_rank);
        if (!rank) return PyErr_Occurred() ? -1 : 0;
        int has = PyObject_IsTrue(rank);
        if (has <= 0) return has;
    }
    if (l->tag_kind != NAME_OTHER) {
        PyObject *hints = PyDict_GetItemWithError(p, l->k_hints);
        if (!hints) return PyErr_Occurred() ? -1 : 0;
        if (!PyList_CheckExact(hints)) return 0;
        int has = PySequence_Contains(hints, l->hint[l->tag_kind]);
        if (has <= 0) return has;
    }
    return 1;
}

/* launch_env.Parser.feed does nothing with a line holding no `NCCL_` (a literal: not here): no
 * prompt can start it (no `@`, no `$` or `+`), and after an untagged start no assignment (no `=`;
 * a `(` start is no assignment's). */
static int launch_env_idle(const char *s, Py_ssize_t n) {
    if (memchr(s, '@', (size_t)n) || memchr(s, '$', (size_t)n) || memchr(s, '+', (size_t)n)) return 0;
    if (s[0] == '(') return 1;
    return !memchr(s, '=', (size_t)n) && !starts(s, n, "export") && !starts(s, n, "declare") && !starts(s, n, "env");
}

/* vllm._NUMBER's first match in t[0:n] without an exponent (one: Python's), its length <= 40:
 * float() of it in *out; 1 found, 0 none, 2 one this does not read. */
static int first_number(const char *t, Py_ssize_t n, double *out, Py_ssize_t *stop) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t j = i;
        if (t[j] == '+' || t[j] == '-') j++;
        Py_ssize_t d = j;
        while (d < n && is_digit(t[d])) d++;
        Py_ssize_t end;
        if (d > j) {  /* \d+(?:\.\d*)? */
            end = d;
            if (end < n && t[end] == '.') {
                end++;
                while (end < n && is_digit(t[end])) end++;
            }
        } else if (j < n && t[j] == '.' && j + 1 < n && is_digit(t[j + 1])) {  /* \.\d+ */
            end = j + 1;
            while (end < n && is_digit(t[end])) end++;
        } else {
            continue;
        }
        if (end < n && (t[end] == 'e' || t[end] == 'E')) {
            Py_ssize_t x = end + 1;
            if (x < n && (t[x] == '+' || t[x] == '-')) x++;
            if (x < n && is_digit(t[x])) return 2;
        }
        if (end - i > 40) return 2;
        /* float(): correctly rounded, as to_double reads a plain decimal (a `+` changes nothing) */
        *out = t[i] == '+' ? to_double(t + i + 1, end - i - 1) : to_double(t + i, end - i);
        *stop = end;
        return 1;
    }
    return 0;
}

/* `\d+(?:\.\d+)?` at t[0:n]: its length (0: none), float() of it in *out (<= 40 characters). */
static Py_ssize_t engine_number(const char *t, Py_ssize_t n, double *out) {
    Py_ssize_t i = 0;
    while (i < n && is_digit(t[i])) i++;
    if (i == 0) return 0;
    if (i + 1 < n && t[i] == '.' && is_digit(t[i + 1])) {
        i++;
        while (i < n && is_digit(t[i])) i++;
    }
    if (i > 40) return 0;
    *out = to_double(t, i);  /* float(), correctly rounded */
    return i;
}

#define ENGINE_MAX 48  /* metrics of one line at most: more is Python's */

#define ENGINE_READ 3  /* engine_read's: not OK, PYTHON or ERROR */
#define ENGINE_IDLE 4  /* an idle interval (_engine) or one without drafts (_spec_v1): its line is `used` */

/* vllm.Parser._engine on s[0:n]: 0 when _ENGINE finds nothing (the line does nothing), ENGINE_READ with the
 * metrics in *count/metric/value and the DP engine in *dp (-1: none), PYTHON for what Python reads
 * (an idle interval, a number out of the plain grammar, too many fields). */
static int engine_read(VllmLines *l, const char *s, Py_ssize_t n, int *count, int *metric, double *value,
                       long long *dp, int64_t self_throughput) {
    static const char A[] = "Avg prompt throughput: ", B[] = " tokens/s, Avg generation throughput: ";
    const char *at = find(s, n, A, (Py_ssize_t)sizeof(A) - 1);
    if (!at) return 0;
    Py_ssize_t i = at - s;
    /* the leftmost match: at `Engine N: ` when it leads the first `Avg prompt throughput: `; a later
     * one is Python's (the first did not match whole) */
    *dp = -1;
    if (i >= 2 && s[i - 1] == ' ' && s[i - 2] == ':') {
        Py_ssize_t d = i - 2;
        while (d > 0 && is_digit(s[d - 1])) d--;
        if (d < i - 2 && d >= 7 && memeq(s + d - 7, "Engine ", 7)) {
            if (i - 2 - d > 18) return PYTHON;
            long long x = 0;
            for (Py_ssize_t k = d; k < i - 2; k++) x = x * 10 + (s[k] - '0');
            *dp = x;
        }
    }
    i += (Py_ssize_t)sizeof(A) - 1;
    double prompt = 0, generation = 0;
    Py_ssize_t k = engine_number(s + i, n - i, &prompt);
    if (!k) return PYTHON;
    i += k;
    if (!starts_len(s + i, n - i, B, (Py_ssize_t)sizeof(B) - 1)) return PYTHON;
    i += (Py_ssize_t)sizeof(B) - 1;
    if (!(k = engine_number(s + i, n - i, &generation))) return PYTHON;
    i += k;
    if (!starts_len(s + i, n - i, " tokens/s", 9)) return PYTHON;
    i += 9;
    if (i < n && s[i] == ',') i++;
    while (i < n && is_space(s[i])) i++;
    if (!(generation > 0)) return ENGINE_IDLE;  /* an idle interval: not a window, its line `used` */
    int c = 0;
    metric[c] = (int)self_throughput, value[c++] = generation;
    metric[c] = l->s_prompt, value[c++] = prompt;
    /* line[m.end():].rstrip(".").split(","), each piece partition(":") */
    Py_ssize_t e = n;
    while (e > i && s[e - 1] == '.') e--;
    while (i <= e) {
        const char *comma = memchr(s + i, ',', (size_t)(e - i));
        Py_ssize_t pe = comma ? comma - s : e;
        const char *colon = memchr(s + i, ':', (size_t)(pe - i));
        if (colon) {
            const char *key = s + i;
            Py_ssize_t kl = colon - key;
            strip(&key, &kl);
            for (int f = 0; f < l->nfield; f++) {
                if (l->field[f].len != kl) continue;
                Py_ssize_t q = 0;
                while (q < kl && (key[q] >= 'A' && key[q] <= 'Z' ? key[q] | 0x20 : key[q]) == l->field[f].key[q]) q++;
                if (q < kl) continue;
                double x = 0;
                Py_ssize_t stop = 0;
                int got = first_number(colon + 1, s + pe - (colon + 1), &x, &stop);
                if (got == 2) return PYTHON;
                if (got == 1 && isfinite(x)) {
                    if (c == ENGINE_MAX) return PYTHON;
                    metric[c] = l->field[f].metric, value[c++] = x;
                }
                break;
            }
        }
        i = pe + 1;
    }
    *count = c;
    return ENGINE_READ;
}

/* vllm._value of t[0:n]: 1 with *out, 0 for None, 2 for a number this does not read. */
static int spec_value(const char *t, Py_ssize_t n, double *out) {
    double x = 0;
    Py_ssize_t stop = 0;
    int got = first_number(t, n, &x, &stop);
    if (got != 1) return got;
    if (!isfinite(x)) return 0;
    if ((stop < n && t[stop] == '%') || (stop + 1 < n && t[stop + 1] == '%')) x = x / 100;
    *out = x;
    return 1;
}

/* A `Key: ` of vllm._KEY at body[pos] (`^` or `,\s*`, then `[A-Za-z][A-Za-z \-]*?:\s*`): the end,
 * the label in [*k0, *k1); 0 when none starts there. */
static Py_ssize_t spec_key_at(const char *b, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t *k0, Py_ssize_t *k1) {
    for (int alt = pos == 0 ? 0 : 1; alt < 2; alt++) {
        Py_ssize_t j = pos;
        if (alt == 1) {
            if (j >= n || b[j] != ',') return 0;
            j++;
            while (j < n && is_space(b[j])) j++;
        }
        if (j >= n || !is_alpha(b[j])) continue;
        Py_ssize_t k = j + 1;
        while (k < n && CLASS[(unsigned char)b[k]] & C_KEY) k++;  /* [A-Za-z -] */
        if (k >= n || b[k] != ':') continue;
        *k0 = j, *k1 = k;
        k++;
        while (k < n && is_space(b[k])) k++;
        return k;
    }
    return 0;
}

typedef struct {
    int has[SK_COUNT];
    double v[SK_COUNT];
    int npos;
    double pos[SPEC_POSITIONS];
} SpecFields;

/* The spec_key id of a stripped label (.lower().replace("tokens tokens", "tokens")), -1 when none, -2 for a
 * label longer than any key (Python's, to be sure). */
static int spec_label_id(VllmLines *l, const char *lab, Py_ssize_t ll) {
    char low[64];
    if (ll >= (Py_ssize_t)sizeof(low)) return -2;
    unsigned slot = label_hash(lab, ll) & (SPEC_SEEN - 1);
    if (l->spec_seen[slot].len == ll && ll > 0 && memeq(l->spec_seen[slot].text, lab, (size_t)ll))
        return l->spec_seen[slot].id;
    /* the V0.5 typo (`Number of draft tokens tokens:`): every occurrence from the left, none overlapping */
    Py_ssize_t lw = 0;
    for (Py_ssize_t q = 0; q < ll;) {
        if (q + 13 <= ll) {
            Py_ssize_t m = 0;
            while (m < 13 && lower(lab[q + m]) == "tokens tokens"[m]) m++;
            if (m == 13) { memcpy(low + lw, "tokens", 6); lw += 6, q += 13; continue; }
        }
        low[lw++] = lower(lab[q++]);
    }
    int id = -1;
    for (int k = 0; k < l->nspec_key; k++)
        if (l->spec_key[k].len == lw && memeq(l->spec_key[k].key, low, (size_t)lw)) { id = l->spec_key[k].id; break; }
    if (ll > 0 && ll <= SPEC_LABEL_MAX) {
        memcpy(l->spec_seen[slot].text, lab, (size_t)ll);
        l->spec_seen[slot].len = ll, l->spec_seen[slot].id = id;
    }
    return id;
}

/* vllm.spec_fields(body): 1, or 2 for what Python reads (a label it rewrites, a number out of the
 * plain grammar, more positions than kept). */
static int spec_fields_c(VllmLines *l, const char *b, Py_ssize_t n, SpecFields *f) {
    memset(f, 0, sizeof(*f));
    Py_ssize_t starts[64], ends[64], l0[64], l1[64];
    int nk = 0;
    for (Py_ssize_t pos = 0; pos < n;) {
        Py_ssize_t k0, k1, end = spec_key_at(b, n, pos, &k0, &k1);
        if (!end) { pos++; continue; }
        if (nk == 64) return 2;
        starts[nk] = pos, ends[nk] = end, l0[nk] = k0, l1[nk] = k1;
        nk++;
        pos = end;
    }
    for (int i = 0; i < nk; i++) {
        const char *lab = b + l0[i];
        Py_ssize_t ll = l1[i] - l0[i];
        strip(&lab, &ll);
        int id = spec_label_id(l, lab, ll);
        if (id == -2) return 2;
        if (id < 0) continue;
        /* text = body[end:next].strip().rstrip(".,").strip() */
        const char *t = b + ends[i];
        Py_ssize_t tn = (i + 1 < nk ? starts[i + 1] : n) - ends[i];
        strip(&t, &tn);
        while (tn > 0 && (t[tn - 1] == '.' || t[tn - 1] == ',')) tn--;
        strip(&t, &tn);
        if (id == SK_POSITIONS) {
            double vals[SPEC_POSITIONS];
            int c = 0, all = 1;
            for (Py_ssize_t a = 0; a <= tn;) {
                const char *comma = memchr(t + a, ',', (size_t)(tn - a));
                Py_ssize_t e = comma ? comma - t : tn;
                if (!blank_line(t + a, e - a)) {  /* `if v.strip()` */
                    double x = 0;
                    int got = spec_value(t + a, e - a, &x);
                    if (got == 2) return 2;
                    if (got == 0) all = 0;
                    else if (c == SPEC_POSITIONS) return 2;
                    else vals[c++] = x;
                }
                a = e + 1;
            }
            if (c && all) {
                memcpy(f->pos, vals, sizeof(double) * (size_t)c);
                f->npos = c, f->has[SK_POSITIONS] = 1;
            }
            continue;
        }
        double x = 0;
        int got = spec_value(t, tn, &x);
        if (got == 2) return 2;
        if (got == 1) f->has[id] = 1, f->v[id] = x;
    }
    return 1;
}

/* What a spec line read here changes in the vllm parser besides its window: the launch's draft
 * length (_known_k; -1: none) and the V0 counters (v0_previous) when `v0`. */
typedef struct { long long k; int v0; double cur[3]; } SpecWrites;

#define EXACT_INT_MAX 9007199254740992.0  /* 2**53: an int a double holds exactly */

/* A float of the parser (v0_previous's): 1 with *out, 0 when it is another type (Python's). */
static int exact_float(PyObject *o, double *out) {
    if (!PyFloat_CheckExact(o)) return 0;
    *out = PyFloat_AS_DOUBLE(o);
    return 1;
}

static int spec_steps(VllmLines *l, long long *k);

/* `self.launch_k or self._k()` of vllm.Parser: 1 with *k (0: none), 0 for what Python reads (a bool,
 * an int past 2**53), -1 on error. `k` is the draft length this line sets (-1: none). */
static int spec_draft_length(VllmLines *l, long long line_k, long long *k) {
    *k = 0;
    if (line_k > 0) { *k = line_k; return 1; }
    PyObject *lk = GET_ATTR(l->parser, "launch_k");
    if (!lk) return -1;
    if (lk != Py_None) {
        int ok = PyLong_CheckExact(lk);
        long long x = ok ? PyLong_AsLongLong(lk) : 0;
        Py_DECREF(lk);
        if (x == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
        if (!ok || x < 0 || (double)x > EXACT_INT_MAX) return 0;
        if (x > 0) { *k = x; return 1; }
    } else {
        Py_DECREF(lk);
    }
    return spec_steps(l, k);
}

/* vllm.Parser._k(): the `spec.steps` setting when it is an int > 0: 1 with *k (0: none), 0 for what
 * Python reads (a bool, an int past 2**53), -1 on error. */
static int spec_steps(VllmLines *l, long long *k) {
    *k = 0;
    PyObject *result = GET_ATTR(l->parser, "result");
    PyObject *settings = result ? GET_ATTR(result, "settings") : NULL;
    Py_XDECREF(result);
    if (!settings) return -1;
    if (!PyDict_CheckExact(settings)) { Py_DECREF(settings); return 0; }
    PyObject *setting = DICT_GET(settings, "spec.steps");  /* borrowed */
    PyObject *steps = setting ? GET_ATTR(setting, "value") : NULL;
    Py_DECREF(settings);
    if (!setting) return 1;
    if (!steps) return -1;
    int r = 1;
    if (PyBool_Check(steps) || (PyLong_Check(steps) && !PyLong_CheckExact(steps))) r = 0;  /* isinstance int: Python's */
    else if (PyLong_CheckExact(steps)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(steps, &overflow);
        if (x == -1 && PyErr_Occurred()) r = -1;
        else if (overflow > 0 || (double)x > EXACT_INT_MAX) r = 0;
        else if (x > 0) *k = x;
    }
    Py_DECREF(steps);
    return r;
}

/* vllm.Parser._spec_v0 with f's counters: its records (none: an interval without drafts, or a
 * counter missing), the writes; PYTHON for what Python reads, ERROR. */
static int spec_v0(VllmLines *l, const SpecFields *f, SpecWrites *w, int *count, int *metric, double *value) {
    *count = 0;
    if (!f->has[SK_ACCEPTED] || !f->has[SK_DRAFTED] || !f->has[SK_EMITTED]) return ENGINE_READ;
    double cur[3] = {f->v[SK_ACCEPTED], f->v[SK_DRAFTED], f->v[SK_EMITTED]}, prev[3], d[3];
    PyObject *p = GET_ATTR(l->parser, "v0_previous");
    if (!p) return ERROR;
    int have = p != Py_None;
    if (have && !(PyTuple_CheckExact(p) && PyTuple_GET_SIZE(p) == 3 && exact_float(PyTuple_GET_ITEM(p, 0), &prev[0])
                  && exact_float(PyTuple_GET_ITEM(p, 1), &prev[1]) && exact_float(PyTuple_GET_ITEM(p, 2), &prev[2]))) {
        Py_DECREF(p);
        return PYTHON;
    }
    Py_DECREF(p);
    int grew = have && cur[0] >= prev[0] && cur[1] >= prev[1] && cur[2] >= prev[2];
    for (int i = 0; i < 3; i++) d[i] = grew ? cur[i] - prev[i] : cur[i];
    long long k = 0;
    if (d[1] > 0) {
        int got = spec_draft_length(l, w->k, &k);
        if (got <= 0) return got < 0 ? ERROR : PYTHON;
    }
    w->v0 = 1;
    memcpy(w->cur, cur, sizeof(cur));
    if (!(d[1] > 0)) return ENGINE_READ;  /* nothing was drafted since the last line: not a window */
    int c = 0;
    metric[c] = l->s_spec_names[0], value[c++] = round6(d[0] / d[1]);
    metric[c] = l->s_spec_names[1], value[c++] = round6(d[0]);
    metric[c] = l->s_spec_names[2], value[c++] = round6(d[1]);
    metric[c] = l->s_spec_names[7], value[c++] = round6(d[2]);
    if (k) {  /* V0 counts k draft tokens per sequence per step: drafted / k verify steps */
        double steps = d[1] / (double)k;
        metric[c] = l->s_spec_names[6], value[c++] = round6(d[2] / steps);
        metric[c] = l->s_spec_names[8], value[c++] = round6(d[2] / (steps * (double)(k + 1)));
    }
    *count = c;
    return ENGINE_READ;
}

/* vllm.Parser._spec (the body after `SpecDecoding metrics:` or `Speculative metrics:`): 0 nothing,
 * ENGINE_READ with the records' metric and value and the parser's writes, ENGINE_IDLE, PYTHON for
 * the rest (a first record, a draft length without `spec.steps` set, a number out of the plain
 * grammar, a draft length Python's int holds and a double does not), ERROR. */
static int spec_read(VllmLines *l, const char *b, Py_ssize_t n, int flags, int *count, int *metric, double *value,
                     SpecWrites *w) {
    SpecFields f;
    w->k = -1, w->v0 = 0;
    if (spec_fields_c(l, b, n, &f) != 1) return PYTHON;
    if (!f.has[SK_ACCEPTED] && !f.has[SK_MEAN] && !f.has[SK_RATE]) return 0;
    if (!(flags & F_VLLM_SPEC) || !(flags & F_ENGINE)) return PYTHON;
    if (f.has[SK_K]) {  /* `1 <= k < 10**18 and k == int(k)`: spec.steps (set already) and the launch's k */
        double k = f.v[SK_K];
        if (k >= 1 && k < 1e18 && k == floor(k)) {
            if (!(flags & F_STEPS) || k > EXACT_INT_MAX) return PYTHON;
            w->k = (long long)k;
        }
    }
    if (f.has[SK_POSITIONS] && !(flags & F_STEPS)) return PYTHON;
    if (f.has[SK_EFFICIENCY] || f.has[SK_EMITTED]) return spec_v0(l, &f, w, count, metric, value);
    if (f.has[SK_DRAFTED] && f.v[SK_DRAFTED] <= 0) return ENGINE_IDLE;  /* `nan%`: no window, the line `used` */
    long long k = 0;  /* without a mean length, tokens per cycle is 1 + accepted * k / drafted (_k()) */
    if (!f.has[SK_MEAN] && f.has[SK_ACCEPTED] && f.has[SK_DRAFTED] && f.v[SK_DRAFTED] != 0) {
        int got = spec_steps(l, &k);
        if (got <= 0) return got < 0 ? ERROR : PYTHON;
    }
    int c = 0;
    double rate = f.v[SK_RATE];
    int has_rate = f.has[SK_RATE];
    if (!has_rate && f.has[SK_ACCEPTED] && f.has[SK_DRAFTED] && f.v[SK_DRAFTED] != 0)
        rate = f.v[SK_ACCEPTED] / f.v[SK_DRAFTED], has_rate = 1;
    int ids[] = {-1, SK_ACCEPTED, SK_DRAFTED, SK_ACCEPTED_TPS, SK_DRAFTED_TPS, SK_MEAN, SK_MEAN};
    for (int i = 0; i < 7; i++) {
        int has = i == 0 ? has_rate : f.has[ids[i]];
        if (!has) continue;
        metric[c] = l->s_spec_names[i], value[c++] = round6(i == 0 ? rate : f.v[ids[i]]);
    }
    if (k) metric[c] = l->s_spec_names[6], value[c++] = round6(1 + f.v[SK_ACCEPTED] * (double)k / f.v[SK_DRAFTED]);
    for (int i = 0; i < f.npos; i++) metric[c] = l->s_pos[i], value[c++] = round6(f.pos[i]);
    *count = c;
    return ENGINE_READ;
}

/* The parser's writes of a spec line read here (SpecWrites): 0, or -1 on error. */
static int spec_write(VllmLines *l, const SpecWrites *w) {
    if (w->k >= 0) {
        PyObject *k = PyLong_FromLongLong(w->k);
        int bad = !k || SET_ATTR(l->parser, "launch_k", k) < 0;
        Py_XDECREF(k);
        if (bad) return -1;
    }
    if (w->v0) {
        PyObject *t = Py_BuildValue("(ddd)", w->cur[0], w->cur[1], w->cur[2]);
        int bad = !t || SET_ATTR(l->parser, "v0_previous", t) < 0;
        Py_XDECREF(t);
        if (bad) return -1;
    }
    return 0;
}

/* The next window of a counter of the vllm parser (its `spec_window`, `stage_window`: the attribute
 * + 1), stored: -1 on error. */
static long parser_window(VllmLines *l, const char *counter) {
    PyObject *w = get_named(l->parser, counter);
    if (!w) return -1;
    long window = PyLong_CheckExact(w) ? PyLong_AsLong(w) : -1;
    Py_DECREF(w);
    if (window < 0 || window >= LONG_MAX - 1) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "%s must be an int", counter);
        return -1;
    }
    PyObject *nw = PyLong_FromLong(window + 1);
    int bad = !nw || set_named(l->parser, counter, nw) < 0;
    Py_XDECREF(nw);
    return bad ? -1 : window + 1;
}

/* The next window of a DP engine (vllm.Parser.engine_windows[rank] + 1), stored: -1 on error. */
static long engine_window(VllmLines *l, PyObject *rank) {
    PyObject *w = PyDict_GetItemWithError(l->windows, rank);
    if (!w && PyErr_Occurred()) return -1;
    long window = 1;
    if (w) {
        if (!PyLong_CheckExact(w)) { PyErr_SetString(PyExc_TypeError, "engine windows must be ints"); return -1; }
        window = PyLong_AsLong(w);
        if (window == -1 && PyErr_Occurred()) return -1;
        if (window >= LONG_MAX - 1) { PyErr_SetString(PyExc_OverflowError, "engine window"); return -1; }
        window++;
    }
    PyObject *nw = PyLong_FromLong(window);
    if (!nw) return -1;
    int bad = PyDict_SetItem(l->windows, rank, nw);
    Py_DECREF(nw);
    return bad < 0 ? -1 : window;
}

/* result.used.add(lineno) (the vllm parser's result): 0, or -1 on error. */
static int vllm_used(VllmLines *l, int64_t lineno) {
    PyObject *result = GET_ATTR(l->parser, "result");
    PyObject *used = result ? GET_ATTR(result, "used") : NULL;
    Py_XDECREF(result);
    if (!used) return -1;
    PyObject *ln = PySet_CheckExact(used) ? PyLong_FromLongLong(lineno) : NULL;
    int bad = !ln || PySet_Add(used, ln) < 0;
    if (bad && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "result.used must be a set");
    Py_XDECREF(ln);
    Py_DECREF(used);
    return bad ? -1 : 0;
}

/* vllm.Parser.launch_k as a draft length: 1 with *k (0: None), 0 for what Python reads (not an
 * exact int a double holds), -1 on error. */
static int launch_k_of(VllmLines *l, long long *k) {
    *k = 0;
    PyObject *lk = GET_ATTR(l->parser, "launch_k");
    if (!lk) return -1;
    int r = 1;
    if (lk != Py_None) {
        long long x = PyLong_CheckExact(lk) ? PyLong_AsLongLong(lk) : -1;
        if (x == -1 && PyErr_Occurred()) PyErr_Clear();
        if (x < 0 || (double)x > EXACT_INT_MAX) r = 0;
        else *k = x;
    }
    Py_DECREF(lk);
    return r;
}

/* vllm.Parser._stage's writes and records of a stage line's fields (stage_fields, with a scoring or
 * proposal time): launch_used, the next stage window, a Phase a field, the proposal time per
 * cycle (k draft tokens) where the launch's draft length is known. 0, or -1 on error. */
static int vllm_stage(Scanner *self, VllmLines *l, const int *key, const double *ms, int count, int64_t lineno,
                      int process) {
    if (SET_ATTR(l->parser, "launch_used", Py_True) < 0) return -1;
    long window = parser_window(l, "stage_window");
    if (window < 0) return -1;
    long long k = l->stage_k;
    for (int i = 0; i < count; i++) {
        int name = l->s_phases[key[i]];
        double x = ms[i];
        if (key[i] == 0) {  /* proposal time per draft token: a cycle drafts k of them */
            if (k) x = round6(x * (double)k);
            else name = l->s_phases[4];
        }
        if (add_phase_of(self, name, x, NAN, window, lineno, l->s_stage, process) < 0) return -1;
    }
    return 0;
}

/* A line read_line has found the literals and STARTS of: OK, PYTHON, ERROR, or DECLINE (not a
 * line of this part's: read_line goes on as before). */
static int vllm_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, Eagle *e, int flags, int64_t lineno,
                     uint64_t lits, unsigned by_literal, unsigned by_start) {
    struct vllm_state *v = self->vllm;
    if (!v || !v->lines.armed || n == 0 || e->in_block) return DECLINE;
    VllmLines *l = &v->lines;
    /* literals: vLLM's `throughput:` alone (and the scanner's own); STARTS: the Tagger's, launch_env's */
    int throughput = l->lit_throughput >= 0 && (lits >> l->lit_throughput & 1);
    int metrics = l->lit_metrics >= 0 && (lits >> l->lit_metrics & 1);
    int llm = l->lit_llm >= 0 && (lits >> l->lit_llm & 1);
    int stage = l->lit_stage >= 0 && (lits >> l->lit_stage & 1);
    uint64_t args_lit = args_literal(self);  /* `non-default args` (_scan_vllm_args.h), 0 when not armed */
    /* feed()'s branch for it is taken after those of `metrics:`, `throughput:` and `stage times` */
    int args = (lits & args_lit) && !throughput && !metrics && !stage;
    uint64_t other = lits & ~(throughput ? 1ull << l->lit_throughput : 0) & ~(metrics ? 1ull << l->lit_metrics : 0)
        & ~(llm ? 1ull << l->lit_llm : 0) & ~(stage ? 1ull << l->lit_stage : 0) & ~(args ? args_lit : 0);
    for (uint64_t o = other; o; o &= o - 1)
        if (self->lit_reader[__builtin_ctzll(o)] >= 0) return DECLINE;
    if (by_literal & ~BIT(R_VLLM) || by_start & ~(BIT(R_TAGGER) | BIT(R_LAUNCH_ENV))) return DECLINE;
    /* `LLM` alone (no `metrics:` or `throughput:`, whose branches vllm.Parser.feed takes first): _version's
     * only where `version` or `with config:` is on the line too; else feed does nothing with it
     * (`vLLM Version : 0.8.5`, a collect_env dump's, or `the current vLLM instance can use ...`) */
    if (llm && !throughput && !metrics && !args && (find(s, n, "version", 7) || find(s, n, "with config:", 12)))
        return PYTHON;
    /* `stage times` alone (feed's branch after `metrics:` and `throughput:`), on an ASCII line */
    if (stage && (throughput || metrics || llm)) return PYTHON;
    if (stage)
        for (Py_ssize_t i = 0; i < n; i++)
            if ((unsigned char)s[i] >= 0x80) return PYTHON;
    int process = self->s_main, kind = NAME_OTHER;
    Py_ssize_t name_len, pid0, pid1;
    int ranked;
    Py_ssize_t end = s[0] == '(' ? vllm_tag(s, n, &name_len, &ranked, &pid0, &pid1) : 0;
    if (end) {
        int known = vllm_known(self, l, s, end, name_len, ranked, pid0, pid1);
        if (known <= 0) return known < 0 ? ERROR : PYTHON;
        process = l->tag_idx, kind = l->tag_kind;
    } else {
        /* untagged: the Tagger's "main" (a `(`, `[`, `#`, `$`, `+` first is read_line's) */
        char c = s[0];
        if (c == '(' || c == '[' || c == '#' || c == '$' || c == '+') return DECLINE;
        if (!throughput && !metrics && !llm && !stage && !args) {
            /* A line only launch_env's STARTS names (a capital first: `INFO: ...`, a table's row)
             * with no assignment, prompt or NCCL_ on it: launch_env does nothing with it, the
             * Tagger makes it "main"'s. read_line would hand every such line back. */
            if (by_literal || by_start != BIT(R_LAUNCH_ENV) || !(flags & F_MAIN) || memchr(s, '=', (size_t)n)
                || !launch_env_idle(s, n)) return DECLINE;
            if (offer_line(v, s, n, line, lineno, 1) < 0) return ERROR;  /* launch_env's STARTS */
            return OK;
        }
        if (!(flags & F_MAIN)) return PYTHON;
    }
    if (by_start & BIT(R_LAUNCH_ENV) && !(stage ? launch_env_idle_start(s, n) : launch_env_idle(s, n))) return PYTHON;
    int count = 0, metric[ENGINE_MAX];
    int stage_key[4], stages = 0;
    double stage_ms[4];
    double value[ENGINE_MAX];
    long long dp = -1;
    int spec = 0, idle = 0;
    if (metrics) {  /* vllm.Parser.feed: `metrics:` first, and then not `throughput:` */
        const char *a = find(s, n, "SpecDecoding metrics:", 21), *b = find(s, n, "Speculative metrics:", 20);
        const char *m = a && (!b || a < b) ? a : b;
        if (m) {
            Py_ssize_t i = m - s + (m == a ? 21 : 20);
            while (i < n && is_space(s[i])) i++;
            SpecWrites w;
            int got = spec_read(l, s + i, n - i, flags, &count, metric, value, &w);
            if (got == PYTHON || got == ERROR) return got;
            spec = got == ENGINE_READ;
            idle = got == ENGINE_IDLE;
            /* the writes come once nothing can hand the line back (only an error after this); _spec sets
             * launch_used on any line it reads on (the first after a launch's start among them) */
            if (spec && spec_write(l, &w) < 0) return ERROR;
            if ((spec || idle) && SET_ATTR(l->parser, "launch_used", Py_True) < 0) return ERROR;
        }
    } else if (stage) {  /* vllm.Parser._stage: a V0 stage line with a scoring or proposal time */
        const char *m = find(s, n, "SpecDecodeWorker stage times:", 29);
        if (m) {
            Py_ssize_t i = m - s + 29;
            while (i < n && is_space(s[i])) i++;
            if (!stage_fields(s + i, n - i, stage_key, stage_ms, &stages)) return PYTHON;
            int timed = 0;
            for (int k = 0; k < stages; k++) timed |= stage_key[k] <= 1;
            if (!timed) stages = 0;  /* neither time: _stage does nothing */
            if (stages && (!(flags & F_VLLM_STAGES) || !(flags & F_ENGINE))) return PYTHON;  /* first records */
            int got = stages ? launch_k_of(l, &l->stage_k) : 1;
            if (got <= 0) return got < 0 ? ERROR : PYTHON;
        }
    } else if (args) {  /* vllm.Parser._args: a launch's arguments (_scan_vllm_args.h) */
        int got = args_line(self, l->parser, s, n, flags);
        if (got <= 0) return got < 0 ? ERROR : PYTHON;
    } else if (throughput && find(s, n, "Avg prompt throughput", 21)) {
        int got = engine_read(l, s, n, &count, metric, value, &dp, self->s_throughput);
        if (got == PYTHON) return PYTHON;
        if ((got == ENGINE_READ || got == ENGINE_IDLE) && (!(flags & F_ENGINE) || !(flags & F_VLLM_ENGINE)))
            return PYTHON;  /* first records */
        idle = got == ENGINE_IDLE;
    }
    /* read: the Tagger's launch line, the records, the Watcher's offer */
    if (kind == NAME_LAUNCHER) {
        PyObject *ln = PyLong_FromLongLong(lineno);
        int bad = !ln || PyList_Append(l->launch_lines, ln) < 0;
        Py_XDECREF(ln);
        if (bad) return ERROR;
    }
    if (idle && vllm_used(l, lineno) < 0) return ERROR;
    if (stages && vllm_stage(self, l, stage_key, stage_ms, stages, lineno, process) < 0) return ERROR;
    if (spec && count) {
        long window = parser_window(l, "spec_window");
        if (window < 0) return ERROR;
        for (int i = 0; i < count; i++)
            if (add_metric(self, metric[i], value[i], window, lineno, l->s_spec, self->s_empty, process) < 0)
                return ERROR;
    } else if (count) {
        int rank_idx = l->rank_idx;
        if (rank_idx < 0 || l->rank_dp != dp) {  /* (a log's engine lines are of one rank, or a few by turns) */
            char rank[32];
            int rl = dp >= 0 ? snprintf(rank, sizeof(rank), "DP%lld", dp) : 0;
            if ((rank_idx = intern_str(self, rank, rl)) < 0) return ERROR;
            l->rank_dp = dp, l->rank_idx = rank_idx;
        }
        PyObject *rank_str = str_obj(self, rank_idx);
        long window = engine_window(l, rank_str);
        if (window < 0) return ERROR;
        for (int i = 0; i < count; i++)
            if (add_metric(self, metric[i], value[i], window, lineno, l->s_source, rank_idx, process) < 0) return ERROR;
    }
    if ((by_literal | by_start)
        && offer_line(v, s, n, line, lineno, ((by_literal | by_start) & ~BIT(R_TAGGER)) != 0) < 0) return ERROR;
    return OK;
}
