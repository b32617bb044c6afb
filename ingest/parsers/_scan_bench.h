/* Serving benchmark result blocks closed in the scanner, and the client's settings lines read there
 * (serving.BlockReader, sglang/vllm.Parser._bench_block and _bench_emit; _scan_vllm.h reads the rows).
 *
 * On a log of `vllm bench serve` or `sglang.bench_serving` runs each block ends at a footer (`=====`)
 * or at the next title; before this every such line was Python's (native._Parse.bench_close): both
 * readers fed, the owner's records written, the Tagger stamped, the scanner armed again. A sweep of
 * thousands of blocks made it a seventh of the parse. Here (bench_close_here) the block is closed as
 * BlockReader.feed closes it and its records are written as the owner's _bench_emit writes them when
 * nothing it does can change the scan's flags or the records' order:
 *   - the owner is the block's tool, else the log's engine (Block.owner); its format is listed already;
 *   - no record Python made waits (result.phases and metrics empty: the scanner's columns are next);
 *   - the file's list of blocks exists (serving.add_block: the record is appended by calling it, or,
 *     once blocks are counted (OMITTED_KEY) and the list is full, counted here);
 *   - each row with a value sets `serving.{key}` unless set (records.Setting made here, first wins);
 *   - its metrics (vLLM: throughput, tokens per cycle, acceptance rate and positions, rounded to 6
 *     places; SGLang: throughput, accept length) go to the scanner's columns, of the "bench" process
 *     (Tagger.stamp: a "main" line's record of a bench source), the line's tag one Tagger.recent lacks;
 *   - the settings the flags read ("engine", "spec.steps") are set already where the block sets them.
 * A title opens both readers' blocks (their open_title, as bench_title), unless the old block carried a
 * mark (`# `: BlockReader.feed opens an unmarked one then) or the title has one. Anything else is left
 * to native._Parse.bench_close, which does it all in Python.
 *
 * The client lines printed before a block (`# Traffic request rate: inf`, `# Maximum request
 * concurrency: 32`, serving._CLIENT) with no block open set both readers' `client` here (bench_client);
 * a `#` line among them (a block copied as comments) is also the Tagger's and nccl_tests' (STARTS), which
 * do nothing with it when it names none of nccl_tests._comment's words and no row is held (bench_hash_idle).
 */

#define BENCH_POS_KEPT 64  /* acceptance_pos_{i} names kept made; past them each is made again */
#define BENCH_KEYED 256
enum { MK_NONE, MK_THROUGHPUT, MK_TOKENS, MK_RATE, MK_POSITION };  /* a row key's metric (bench_metric_name) */

/* The attributes read here, their names made once (bench_emit) */
enum { A_VALUE, A_KEY, A_LINE, A_PROCESSES, A_BENCH_BLOCKS, A_BLOCK, A_SETTINGS, A_TOOL, A_FORMATS, A_CLIENT,
       A_COUNT };
static const char *BENCH_ATTRS[A_COUNT] = {"value", "key", "line", "processes", "bench_blocks", "block",
                                           "settings", "tool", "formats", "client"};

typedef struct bench_emit {
    PyObject *parser[2];  /* sglang.Parser, vllm.Parser (their bench_blocks) */
    PyObject *result, *recent;  /* the ParseResult; Tagger.recent (a line's tag other than "main") */
    PyObject *offer;  /* result.offer (the context Watcher's), or None */
    PyObject *setting_type, *add_block;  /* records.Setting; serving.add_block */
    PyObject *k_blocks, *k_omitted, *k_count, *k_engine, *k_steps, *k_spec;  /* keys, and "Speculative Decoding" */
    PyObject *fmt[2], *tool[2];  /* "sglang_bench_serving"/"vllm_bench_serve"; "sglang"/"vllm" */
    PyObject *skeys;  /* row key -> "serving." + key (bounded) */
    PyObject *attr[A_COUNT];  /* BENCH_ATTRS, interned */
    Py_ssize_t kept, recent_max;  /* serving.BLOCKS_KEPT, processes.RECENT */
    int s_src[2], s_bench;  /* "sglang_bench"/"vllm_bench", processes.BENCH_TAG */
    int s_throughput, s_tokens, s_rate;  /* metric names */
    int s_pos[BENCH_POS_KEPT];  /* "acceptance_pos_{i + 1}", or -1 not made yet */
    /* What a row key writes, by the key object (held: its address is not reused while here): its
     * "serving." setting key and its metric kind for each owner (BENCH_KEYS_MAX slots, a few probes;
     * full, the first slot is reused). The keys come from the scanner's table of labels, the same
     * objects block after block. */
    struct { PyObject *key, *skey; signed char kind[2], set; } keyed[BENCH_KEYED];
    /* `set`: the result's settings hold skey (known from this dict: the result's, never replaced, and a
     * setting never removed), so a block's row sets nothing (ParseResult.set: the first source wins) */
    PyObject *settings_of;  /* (borrowed: only compared) */
} BenchEmit;

#define BENCH_SKEYS_MAX 4096

static void bench_emit_release(struct bench_emit *E) {
    if (!E) return;
    PyObject **refs[] = {&E->parser[0], &E->parser[1], &E->result, &E->recent, &E->offer, &E->setting_type,
                         &E->add_block,
                         &E->k_blocks, &E->k_omitted, &E->k_count, &E->k_engine, &E->k_steps, &E->k_spec,
                         &E->fmt[0], &E->fmt[1], &E->tool[0], &E->tool[1], &E->skeys};
    for (size_t i = 0; i < sizeof(refs) / sizeof(*refs); i++) Py_CLEAR(*refs[i]);
    for (int i = 0; i < A_COUNT; i++) Py_CLEAR(E->attr[i]);
    for (int i = 0; i < BENCH_KEYED; i++) { Py_CLEAR(E->keyed[i].key); Py_CLEAR(E->keyed[i].skey); }
    free(E);
}

/* bench_emit(sglang_parser, vllm_parser, result, recent, Setting, add_block, blocks_key, omitted_key, kept,
 * bench_tag, recent_max): what bench_close_here writes a block's records with; bench_emit(None) lets them go. */
static PyObject *Scanner_bench_emit(Scanner *self, PyObject *args) {
    if (not_ready(self)) return NULL;
    struct vllm_state *v = vllm_state_of(self);
    if (!v) return NULL;
    if (PyTuple_GET_SIZE(args) == 1 && PyTuple_GET_ITEM(args, 0) == Py_None) {
        bench_emit_release(v->emit);
        v->emit = NULL;
        Py_RETURN_NONE;
    }
    PyObject *sg, *vl, *result, *recent, *setting_type, *add_block, *k_blocks, *k_omitted;
    Py_ssize_t kept, recent_max;
    const char *tag;
    Py_ssize_t tag_len;
    if (!PyArg_ParseTuple(args, "OOOO!O!OUUns#n", &sg, &vl, &result, &PyDict_Type, &recent, &PyType_Type,
                          &setting_type, &add_block, &k_blocks, &k_omitted, &kept, &tag, &tag_len, &recent_max))
        return NULL;
    if (!PyCallable_Check(add_block) || kept < 0 || recent_max < 0) {
        PyErr_SetString(PyExc_TypeError, "bench_emit: add_block callable, kept and recent_max not negative");
        return NULL;
    }
    BenchEmit *E = calloc(1, sizeof(*E));
    if (!E) return PyErr_NoMemory();
    PyObject *objs[] = {sg, vl, result, recent, setting_type, add_block, k_blocks, k_omitted};
    PyObject **slots[] = {&E->parser[0], &E->parser[1], &E->result, &E->recent, &E->setting_type, &E->add_block,
                          &E->k_blocks, &E->k_omitted};
    for (size_t i = 0; i < sizeof(objs) / sizeof(*objs); i++) Py_INCREF(objs[i]), *slots[i] = objs[i];
    E->kept = kept, E->recent_max = recent_max;
    for (int i = 0; i < BENCH_POS_KEPT; i++) E->s_pos[i] = -1;
    int bad = !(E->k_count = PyUnicode_InternFromString("count"))
        || !(E->k_engine = PyUnicode_InternFromString("engine"))
        || !(E->k_steps = PyUnicode_InternFromString("spec.steps"))
        || !(E->k_spec = PyUnicode_InternFromString("Speculative Decoding"))
        || !(E->fmt[0] = PyUnicode_InternFromString("sglang_bench_serving"))
        || !(E->fmt[1] = PyUnicode_InternFromString("vllm_bench_serve"))
        || !(E->tool[0] = PyUnicode_InternFromString("sglang")) || !(E->tool[1] = PyUnicode_InternFromString("vllm"))
        || !(E->skeys = PyDict_New()) || !(E->offer = GET_ATTR(result, "offer"))
        || (E->s_src[0] = intern_str(self, "sglang_bench", 12)) < 0
        || (E->s_src[1] = intern_str(self, "vllm_bench", 10)) < 0 || (E->s_bench = intern_str(self, tag, tag_len)) < 0
        || (E->s_throughput = intern_str(self, "throughput_tok_s", 16)) < 0
        || (E->s_tokens = intern_str(self, "tokens_per_cycle", 16)) < 0
        || (E->s_rate = intern_str(self, "draft_acceptance_rate", 21)) < 0;
    for (int i = 0; i < A_COUNT && !bad; i++) bad = !(E->attr[i] = PyUnicode_InternFromString(BENCH_ATTRS[i]));
    if (bad) { bench_emit_release(E); return NULL; }
    bench_emit_release(v->emit);
    v->emit = E;
    if (!v->offer) Py_INCREF(E->offer), v->offer = E->offer;  /* (bench() hands the same over) */
    Py_RETURN_NONE;
}

/* "serving." + key (a new reference), made anew (bench_keyed keeps it). */
static PyObject *bench_skey_made(BenchEmit *E, PyObject *key) {
    PyObject *got = PyDict_GetItemWithError(E->skeys, key);
    if (got) return Py_NewRef(got);
    if (PyErr_Occurred()) return NULL;
    PyObject *s = PyUnicode_FromFormat("serving.%U", key);
    if (s && PyDict_GET_SIZE(E->skeys) < BENCH_SKEYS_MAX && PyDict_SetItem(E->skeys, key, s) < 0) Py_CLEAR(s);
    return s;
}

/* A row key's metric kind for an owner (0 SGLang, 1 vLLM), as _bench_emit names the metric. -1 on error. */
static int bench_key_kind(PyObject *key, int owner) {
    const char *k = PyUnicode_AsUTF8(key);
    if (!k) return -1;
    if (strcmp(k, "output_throughput_tok_s") == 0) return MK_THROUGHPUT;
    if (owner == 0 ? strcmp(k, "accept_length") == 0 : strcmp(k, "acceptance_length") == 0) return MK_TOKENS;
    if (owner == 1 && strcmp(k, "acceptance_rate_pct") == 0) return MK_RATE;
    if (owner == 1 && strncmp(k, "acceptance_position_", 20) == 0) return MK_POSITION;
    return MK_NONE;
}

/* The slot of bench_keyed holding `key` (made where none does), or -1 on error. */
static int bench_keyed(BenchEmit *E, PyObject *key) {
    unsigned home = (unsigned)(((uintptr_t)key >> 4) * 2654435761u >> 8) & (BENCH_KEYED - 1), slot = home;
    for (int probe = 0; probe < 8; probe++, slot = (slot + 1) & (BENCH_KEYED - 1)) {
        if (E->keyed[slot].key == key) return (int)slot;
        if (!E->keyed[slot].key) break;
    }
    if (E->keyed[slot].key) slot = home;  /* (every probe taken) */
    int kinds[2] = {bench_key_kind(key, 0), bench_key_kind(key, 1)};
    PyObject *skey = kinds[0] < 0 || kinds[1] < 0 ? NULL : bench_skey_made(E, key);
    if (!skey) return -1;
    Py_INCREF(key);
    Py_XSETREF(E->keyed[slot].key, key);
    Py_XSETREF(E->keyed[slot].skey, skey);
    E->keyed[slot].kind[0] = (signed char)kinds[0], E->keyed[slot].kind[1] = (signed char)kinds[1];
    E->keyed[slot].set = 0;
    return (int)slot;
}

/* The metric a numeric row of the owner's block writes (_bench_emit), by its key: *name (-1 none) and
 * *scale. `positions` counts vLLM's `Position i` rows (acceptance_pos_{i}). 0, or -1 on error. */
static int bench_metric_name(Scanner *self, BenchEmit *E, int owner, PyObject *key, int *positions, int *name,
                             double *scale) {
    *name = -1, *scale = 1;
    int slot = bench_keyed(E, key);
    if (slot < 0) return -1;
    switch (E->keyed[slot].kind[owner]) {
    case MK_THROUGHPUT: *name = E->s_throughput; break;
    case MK_TOKENS: *name = E->s_tokens; break;
    case MK_RATE: *name = E->s_rate, *scale = 100; break;
    case MK_POSITION: {
        int i = ++*positions;
        if (i <= BENCH_POS_KEPT && E->s_pos[i - 1] >= 0) *name = E->s_pos[i - 1];
        else {
            char buf[32];
            int len = snprintf(buf, sizeof(buf), "acceptance_pos_%d", i);
            if ((*name = intern_str(self, buf, len)) < 0) return -1;
            if (i <= BENCH_POS_KEPT) E->s_pos[i - 1] = *name;
        }
        *scale = 100;
        break;
    }
    default: break;
    }
    return 0;
}

/* The value a metric row writes: float(value) / scale, rounded to 6 places for vLLM. */
static double bench_metric_value(int owner, double x, double scale) {
    if (scale != 1) x /= scale;
    return owner == 1 ? round6(x) : x;  /* round(float(value), 6) */
}

/* What a row of the owner's block writes (_bench_emit): the metric's name (-1 none) and value. 1, 0 (the
 * row is Python's: an int float() would round differently) or -1 on error. */
static int bench_metric(Scanner *self, BenchEmit *E, int owner, PyObject *key, PyObject *value, int *positions,
                        int *name, double *x) {
    *name = -1;
    if (!PyLong_CheckExact(value) && !PyFloat_CheckExact(value)) return 1;
    double scale;
    if (bench_metric_name(self, E, owner, key, positions, name, &scale) < 0) return -1;
    if (*name < 0) return 1;
    if (PyFloat_CheckExact(value)) {
        *x = PyFloat_AS_DOUBLE(value);
    } else {
        int overflow;
        long long i = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (i == -1 && PyErr_Occurred()) return -1;
        /* int / 100 is the exact quotient rounded once: a double of the int is exact below 2^53 */
        if (overflow || i > (1LL << 53) || i < -(1LL << 53)) return 0;
        *x = (double)i;
    }
    *x = bench_metric_value(owner, *x, scale);
    return 1;
}

/* bench_metric of a row kept as plain values (BenchRow). */
static int bench_metric_kept(Scanner *self, BenchEmit *E, int owner, const BenchRow *r, int *positions, int *name,
                             double *x) {
    *name = -1;
    if (r->kind != ROW_INT && r->kind != ROW_FLOAT) return 1;
    double scale;
    if (bench_metric_name(self, E, owner, r->key, positions, name, &scale) < 0) return -1;
    if (*name < 0) return 1;
    if (r->kind == ROW_INT && (r->i > (1LL << 53) || r->i < -(1LL << 53))) return 0;
    *x = bench_metric_value(owner, r->kind == ROW_INT ? (double)r->i : r->x, scale);
    return 1;
}

/* SGLang's `backend` row names the engine (_bench_emit): *engine set where its text does ("vllm..." or one
 * holding "sglang"). 0, or -1 on error. */
static int bench_backend(PyObject *key, PyObject *value, int *engine) {
    if (!PyUnicode_Check(value) || PyUnicode_CompareWithASCIIString(key, "backend") != 0) return 0;
    PyObject *vllm = PyUnicode_FromString("vllm"), *sglang = PyUnicode_FromString("sglang");
    Py_ssize_t at = vllm ? PyUnicode_Tailmatch(value, vllm, 0, PY_SSIZE_T_MAX, -1) : -1;
    int in = at == 0 && sglang ? PyUnicode_Contains(value, sglang) : 0;
    Py_XDECREF(vllm);
    Py_XDECREF(sglang);
    if (at < 0 || in < 0) return -1;
    *engine |= at == 1 || in == 1;
    return 0;
}

/* Whether the result's `settings` hold "serving." + key: 1 (the slot's `set`, no lookup once known), 0 with
 * *skey (a new reference) to set it by, -1 on error. */
static int bench_skey_set(BenchEmit *E, PyObject *settings, PyObject *key, PyObject **skey) {
    *skey = NULL;
    if (E->settings_of != settings) {  /* (another dict: what was known is not) */
        for (int i = 0; i < BENCH_KEYED; i++) E->keyed[i].set = 0;
        E->settings_of = settings;
    }
    int slot = bench_keyed(E, key);
    if (slot < 0) return -1;
    if (E->keyed[slot].set) return 1;
    int set = PyDict_Contains(settings, E->keyed[slot].skey);
    if (set > 0) E->keyed[slot].set = 1;
    if (set == 0) *skey = Py_NewRef(E->keyed[slot].skey);
    return set;
}

/* The slot's `set` after a Setting was made for key. */
static void bench_skey_made_set(BenchEmit *E, PyObject *key) {
    int slot = bench_keyed(E, key);  /* (found: bench_skey_set made it) */
    if (slot >= 0) E->keyed[slot].set = 1;
    else PyErr_Clear();
}

/* settings[key] (borrowed) or NULL, -1 in *bad on error. */
static PyObject *bench_setting(PyObject *settings, PyObject *key, int *bad) {
    PyObject *got = PyDict_GetItemWithError(settings, key);
    if (!got && PyErr_Occurred()) *bad = 1;
    return got;
}

/* Whether the row pass may run here: every check _bench_emit's branches need (module comment). 1, 0, -1. */
static int bench_emit_ok(Scanner *self, BenchEmit *E, int owner, PyObject *rows, PyObject *sections,
                         PyObject *settings) {
    int bad = 0, positions = 0, metrics = 0, engine = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        PyObject *value = PyObject_GetAttr(row, E->attr[A_VALUE]);
        PyObject *key = value ? PyObject_GetAttr(row, E->attr[A_KEY]) : NULL;
        PyObject *line = key ? PyObject_GetAttr(row, E->attr[A_LINE]) : NULL;
        int ok = line ? 1 : -1;
        if (line && !PyUnicode_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "a row's key is a str");
            ok = -1;
        }
        if (ok > 0 && value != Py_None) {
            int name;
            double x;
            ok = bench_metric(self, E, owner, key, value, &positions, &name, &x);
            if (ok > 0 && name >= 0) {
                metrics = 1;
                /* Tagger.stamp: a line the Tagger tagged other than "main" is Python's */
                PyObject *tag = PyDict_GetItemWithError(E->recent, line);
                ok = tag ? 0 : PyErr_Occurred() ? -1 : 1;
            }
            if (ok > 0 && owner == 0 && bench_backend(key, value, &engine) < 0) ok = -1;
        }
        Py_XDECREF(value);
        Py_XDECREF(key);
        Py_XDECREF(line);
        if (ok <= 0) return ok;
    }
    struct vllm_state *v = self->vllm;
    for (Py_ssize_t i = 0; i < v->npend; i++) {  /* the rows read here, after those */
        const BenchRow *r = &v->pend[i];
        if (r->kind == ROW_NONE) continue;
        int name;
        double x;
        /* (a row read here is "main"'s: the Tagger was fed no such line, Tagger.recent lacks it) */
        int ok = bench_metric_kept(self, E, owner, r, &positions, &name, &x);
        if (ok <= 0) return ok;
        metrics |= name >= 0;
        if (owner == 0 && r->kind == ROW_TEXT && bench_backend(r->key, r->text, &engine) < 0) return -1;
    }
    if (owner == 1) {
        int spec = PySequence_Contains(sections, E->k_spec);
        if (spec < 0) return -1;
        engine = spec || positions;
    }
    if (engine && !bench_setting(settings, E->k_engine, &bad)) return bad ? -1 : 0;  /* the flags read it */
    if (positions && !bench_setting(settings, E->k_steps, &bad)) return bad ? -1 : 0;
    if (metrics) {  /* the "bench" process is made by Tagger.stamp at its first record */
        PyObject *procs = PyObject_GetAttr(E->result, E->attr[A_PROCESSES]);
        if (!procs) return -1;
        PyObject *tag = self->strings ? PyList_GetItem(self->strings, E->s_bench) : NULL;
        int known = tag ? PySequence_Contains(procs, tag) : -1;
        Py_DECREF(procs);
        if (known <= 0) return known;
    }
    return 1;
}

/* The owner's _bench_emit, its checks passed: the block listed, bench_blocks counted, the rows'
 * settings and metrics. 0, or -1 on error. */
static int bench_emit_rows(Scanner *self, BenchEmit *E, int owner, PyObject *block, PyObject *rows,
                           PyObject *settings) {
    int bad = 0;
    PyObject *listed = bench_setting(settings, E->k_blocks, &bad);
    PyObject *omitted = listed ? bench_setting(settings, E->k_omitted, &bad) : NULL;
    if (bad) return -1;
    PyObject *blocks = listed ? PyObject_GetAttr(listed, E->attr[A_VALUE]) : NULL;
    PyObject *counts = omitted && blocks ? PyObject_GetAttr(omitted, E->attr[A_VALUE]) : NULL;
    PyObject *count = NULL;
    if ((listed && !blocks) || (omitted && blocks && !counts)) bad = 1;
    else if (counts && PyList_Check(blocks) && PyList_GET_SIZE(blocks) >= E->kept && PyDict_Check(counts)
             && !(count = PyDict_GetItemWithError(counts, E->k_count)) && PyErr_Occurred())
        bad = 1;
    if (!bad && count) {  /* add_block past the cap, other configurations seen: counted, not listed */
        PyObject *one = PyLong_FromLong(1);
        PyObject *more = one ? PyNumber_Add(count, one) : NULL;
        bad = !more || PyDict_SetItem(counts, E->k_count, more) < 0;
        Py_XDECREF(one);
        Py_XDECREF(more);
    } else if (!bad && bench_flush(self->vllm) < 0) {  /* add_block lists the block's rows */
        bad = 1;
    } else if (!bad) {
        PyObject *argv[4] = {E->result, block, E->tool[owner], E->fmt[owner]};
        PyObject *got = PyObject_Vectorcall(E->add_block, argv, 4, NULL);
        bad = !got;
        Py_XDECREF(got);
    }
    Py_XDECREF(blocks);
    Py_XDECREF(counts);
    if (bad) return -1;
    PyObject *parser = E->parser[owner];
    PyObject *was = PyObject_GetAttr(parser, E->attr[A_BENCH_BLOCKS]);
    long long window = was && PyLong_Check(was) ? PyLong_AsLongLong(was) + 1 : -1;
    Py_XDECREF(was);
    if (window <= 0 || window > INT64_MAX / 2) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "bench_blocks must be a count");
        return -1;
    }
    PyObject *w = PyLong_FromLongLong(window);
    bad = !w || PyObject_SetAttr(parser, E->attr[A_BENCH_BLOCKS], w) < 0;
    Py_XDECREF(w);
    if (bad) return -1;
    int positions = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows) && !bad; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        PyObject *value = PyObject_GetAttr(row, E->attr[A_VALUE]);
        PyObject *key = value ? PyObject_GetAttr(row, E->attr[A_KEY]) : NULL;
        PyObject *line = key ? PyObject_GetAttr(row, E->attr[A_LINE]) : NULL;
        bad = !line;
        if (!bad && value != Py_None) {
            PyObject *skey;
            int set = bench_skey_set(E, settings, key, &skey);
            if (set == 0) {  /* ParseResult.set: the first source wins */
                PyObject *argv[4] = {skey, value, line, E->fmt[owner]};
                PyObject *made = PyObject_Vectorcall(E->setting_type, argv, 4, NULL);
                set = made ? PyDict_SetItem(settings, skey, made) : -1;
                Py_XDECREF(made);
                if (set == 0) bench_skey_made_set(E, key);
            }
            Py_XDECREF(skey);
            int name;
            double x;
            long long ln = set < 0 ? -1 : PyLong_AsLongLong(line);
            /* (bench_emit_ok took the same rows: no metric is Python's here) */
            int got = set < 0 || (ln == -1 && PyErr_Occurred()) ? -1
                : bench_metric(self, E, owner, key, value, &positions, &name, &x);
            bad = got < 0
                || (got > 0 && name >= 0
                    && add_metric(self, name, x, window, ln, E->s_src[owner], self->s_empty, E->s_bench) < 0);
        }
        Py_XDECREF(value);
        Py_XDECREF(key);
        Py_XDECREF(line);
    }
    struct vllm_state *v = self->vllm;
    for (Py_ssize_t i = 0; i < v->npend && !bad; i++) {  /* the rows read here, after those (as they came) */
        const BenchRow *r = &v->pend[i];
        if (r->kind == ROW_NONE) continue;
        PyObject *skey;
        int set = bench_skey_set(E, settings, r->key, &skey);
        if (set == 0) {  /* ParseResult.set: the first source wins */
            PyObject *value = bench_row_value(r), *ln = value ? PyLong_FromLongLong(r->line) : NULL, *made = NULL;
            if (ln) {
                PyObject *argv[4] = {skey, value, ln, E->fmt[owner]};
                made = PyObject_Vectorcall(E->setting_type, argv, 4, NULL);
            }
            set = made ? PyDict_SetItem(settings, skey, made) : -1;
            Py_XDECREF(value);
            Py_XDECREF(ln);
            Py_XDECREF(made);
            if (set == 0) bench_skey_made_set(E, r->key);
        }
        Py_XDECREF(skey);
        int name;
        double x;
        int got = set < 0 ? -1 : bench_metric_kept(self, E, owner, r, &positions, &name, &x);
        bad = got < 0
            || (got > 0 && name >= 0 && add_metric(self, name, x, window, r->line, E->s_src[owner], self->s_empty,
                                                   E->s_bench) < 0);
    }
    return bad ? -1 : 0;
}

static int bench_open(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, int title);

/* BlockReader.feed at a line closing both open blocks, and the owner's records (module comment):
 * 1 done (the scan reads on with *next_flags), 0 the Python closer's, -1 on error. */
static int bench_close_here(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, int title,
                            int flags) {
    struct vllm_state *v = self->vllm;
    BenchEmit *E = v->emit;
    if (!E || !v->readers[0] || !v->readers[1]) return 0;
    if (title && (v->prefix_len || (n && (s[0] == '#' || s[0] == '>')))) return 0;  /* open_title's prefix differs */
    if (PyDict_GET_SIZE(E->recent) > E->recent_max) return 0;  /* Tagger.stamp trims it */
    PyObject *blocks[2] = {NULL, NULL}, *rows = NULL, *sections = NULL, *settings = NULL, *waiting[2] = {NULL, NULL};
    int ok = -1, owner = 0;
    for (int i = 0; i < 2; i++)
        if (!(blocks[i] = PyObject_GetAttr(v->readers[i], E->attr[A_BLOCK]))) goto done;
    if (blocks[0] == Py_None || blocks[1] == Py_None) { ok = 0; goto done; }
    if (!(rows = block_list(blocks[0], "rows"))
        || !(sections = block_list(blocks[0], "sections"))
        || !(settings = PyObject_GetAttr(E->result, E->attr[A_SETTINGS])))
        goto done;
    if (!PyDict_Check(settings)) { PyErr_SetString(PyExc_TypeError, "settings must be a dict"); goto done; }
    if (!(waiting[0] = block_list(E->result, "phases"))
        || !(waiting[1] = block_list(E->result, "metrics")))
        goto done;
    if (PyList_GET_SIZE(waiting[0]) || PyList_GET_SIZE(waiting[1])) { ok = 0; goto done; }
    if (PyList_GET_SIZE(rows) || v->npend) {  /* BlockReader.feed gives a block with rows only */
        /* Block.owner: the tool its labels named, else the log's engine (SGLang unless vLLM) */
        PyObject *tool = PyObject_GetAttr(blocks[0], E->attr[A_TOOL]);
        if (!tool) goto done;
        if (tool == Py_None) {
            int bad = 0;
            PyObject *engine = bench_setting(settings, E->k_engine, &bad);
            PyObject *value = engine ? PyObject_GetAttr(engine, E->attr[A_VALUE]) : NULL;
            if (bad || (engine && !value)) { Py_DECREF(tool); goto done; }
            owner = value && PyUnicode_Check(value) && PyUnicode_CompareWithASCIIString(value, "vllm") == 0;
            Py_XDECREF(value);
        } else {
            owner = PyUnicode_Check(tool) && PyUnicode_CompareWithASCIIString(tool, "vllm") == 0;
        }
        Py_DECREF(tool);
        PyObject *formats = PyObject_GetAttr(E->result, E->attr[A_FORMATS]);
        int listed = formats ? PySequence_Contains(formats, E->fmt[owner]) : -1;
        Py_XDECREF(formats);
        int has = listed > 0 ? PyDict_Contains(settings, E->k_blocks) : listed;
        if (has <= 0) { ok = has; goto done; }
        if ((ok = bench_emit_ok(self, E, owner, rows, sections, settings)) <= 0) goto done;
        ok = -1;
        if (bench_emit_rows(self, E, owner, blocks[owner], rows, settings) < 0) goto done;
    }
    bench_pend_clear(v);  /* written: the closed blocks' rows are made no Row of */
    ok = -1;
    if (title) {
        if (bench_open(self, s, n, line, lineno, 1) < 0) goto done;
    } else {
        for (int i = 0; i < 2; i++)
            if (PyObject_SetAttr(v->readers[i], E->attr[A_BLOCK], Py_None) < 0) goto done;
        for (int i = 0; i < 2; i++) {
            Py_CLEAR(v->rows[i]); Py_CLEAR(v->sections[i]); Py_CLEAR(v->blocks[i]); Py_CLEAR(v->readers[i]);
        }
        v->next_flags = flags & ~F_BENCH, v->reflag = 1, v->armed_here = 0;
    }
    ok = 1;
done:
    for (int i = 0; i < 2; i++) { Py_XDECREF(blocks[i]); Py_XDECREF(waiting[i]); }
    Py_XDECREF(rows);
    Py_XDECREF(sections);
    Py_XDECREF(settings);
    return ok;
}

/* Whether nccl_tests does nothing with a `#` comment (nccl_tests._comment acts on none of its words, no row
 * is held: a `#` line may release it) and the Tagger tags it "main" (no `Pid`): by_start is theirs only. */
static int bench_hash_idle(Scanner *self, const char *s, Py_ssize_t n, unsigned by_start) {
    if (by_start & ~(BIT(R_TAGGER) | BIT(R_NCCL_TESTS))) return 0;
    Py_ssize_t i = 0;
    while (i < n && is_blank(s[i])) i++;
    if (i >= n || s[i] != '#') return 0;
    if (by_start & BIT(R_TAGGER) && find(s, n, "Pid", 3)) return 0;
    return !(by_start & BIT(R_NCCL_TESTS)) || (bench_tests_idle(self) && !nccl_words(s, n));
}

/* nccl_tests holds no row for a late op name (native: `not nccl_tests.held`), as this scan began. */
static int bench_tests_idle(Scanner *self) {
    return self->tests && self->tests->comments_ok;
}

/* A client settings line with no block open (serving._CLIENT): `^\s*(?:[#>]\s?)?(Traffic request rate|Maximum
 * request concurrency|Max request concurrency):\s*(\S+)\s*$`, parse_value() of its value into both readers'
 * `client`; a line of those literals _CLIENT does not match does nothing (BlockReader.feed's other branches
 * need other literals or its STARTS). The line holds no other literal, is main's, `#` idle (bench_hash_idle),
 * eagle_profile outside a block. OK, ERROR, DECLINE (read_line reads it as before). */
static int bench_client(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, Eagle *e, int flags,
                        int64_t lineno, unsigned *mask, uint64_t lits, unsigned by_start) {
    struct vllm_state *v = self->vllm;
    if (!v || !v->openers[0] || !v->offer || !lits || lits & ~v->client_lits || e->in_block || !(flags & F_MAIN)
        || (n && s[0] == '[') || (by_start && !bench_hash_idle(self, s, n, by_start)))
        return DECLINE;
    int label;
    int tag = tagger_tag(self, s, n, NULL, &label);
    if (tag != TAG_MAIN) return tag < 0 ? ERROR : DECLINE;
    static const char *names[] = {"Traffic request rate", "Maximum request concurrency", "Max request concurrency"};
    Py_ssize_t i = 0;
    while (i < n && is_space(s[i])) i++;
    if (i < n && (s[i] == '#' || s[i] == '>')) {
        i++;
        if (i < n && is_space(s[i])) i++;
    }
    int which = -1;
    for (int k = 0; k < 3 && which < 0; k++) {
        Py_ssize_t len = (Py_ssize_t)strlen(names[k]);
        if (n - i > len && memeq(s + i, names[k], (size_t)len) && s[i + len] == ':') which = k, i += len + 1;
    }
    PyObject *value = NULL;
    if (which >= 0) {
        while (i < n && is_space(s[i])) i++;
        Py_ssize_t v0 = i;
        while (i < n && !is_space(s[i])) i++;
        Py_ssize_t v1 = i;
        while (i < n && is_space(s[i])) i++;
        if (i < n || v1 == v0) which = -1;  /* not _CLIENT's: the line does nothing */
        else {
            int got = bench_value(s + v0, v1 - v0, &value);
            if (got < 0) return ERROR;
            if (got == 0) {  /* parse_value of a word (bench_row's reading): text, or None for nan, n/a, none */
                const char *t = s + v0;
                Py_ssize_t tn = v1 - v0;
                if (!is_alpha(t[0])) return DECLINE;
                for (Py_ssize_t k = 0; k < tn; k++)
                    if (t[k] < 0x20 || t[k] > 0x7e) return DECLINE;
                int none = same_lower(t, tn, "nan") || same_lower(t, tn, "nan%") || same_lower(t, tn, "n/a")
                    || same_lower(t, tn, "none");
                value = none ? Py_NewRef(Py_None) : PyUnicode_DecodeASCII(t, tn, NULL);
                if (!value) return ERROR;
            }
        }
    }
    if (which >= 0) {
        PyObject *key = name_str(which == 0 ? "request_rate" : "max_concurrency");  /* (borrowed) */
        int bad = !key;
        for (int r = 0; r < 2 && !bad; r++) {  /* each reader's own dict, SGLang's first */
            PyObject *client = v->emit ? PyObject_GetAttr(v->openers[r], v->emit->attr[A_CLIENT])
                                       : GET_ATTR(v->openers[r], "client");
            bad = !client || !PyDict_Check(client) || PyDict_SetItem(client, key, value) < 0;
            if (client && !PyDict_Check(client)) PyErr_SetString(PyExc_TypeError, "a reader's client is a dict");
            Py_XDECREF(client);
        }
        Py_DECREF(value);
        if (bad) return ERROR;
    }
    /* offered after the readers, as the engines do */
    if (*mask && offer_line(v, s, n, line, lineno, (*mask & ~BIT(R_TAGGER)) != 0) < 0) return ERROR;
    return OK;
}

/* A cleaned line of non-ASCII text (a text chunk's dirty line: scan_cleaned) that is a `#` comment no reader
 * acts on: the client's progress bar copied with its block, `# 100%|█████| 32/32 [02:30<00:00, 4.71s/it]`.
 * Read on its UTF-8 bytes: the readers' literals and the STARTS of a `#`-led line are ASCII, found in them as
 * in the str. No literal, STARTS the Tagger's and nccl_tests' only, neither acting on it (bench_hash_idle),
 * "main" known, eagle_profile outside a block and no block open; the Watcher offered it where it may hold
 * one of its words (context_may_offer; offer() reads a non-ASCII line itself). OK, or PYTHON (with *mask ~0,
 * as before). */
static int bench_dirty_comment(Scanner *self, PyObject *line, int64_t lineno, Eagle *e, int flags, unsigned *mask) {
    struct vllm_state *v = self->vllm;
    if (!v || !v->emit || !(flags & F_MAIN) || flags & F_BENCH || e->in_block) return PYTHON;
    if (PyUnicode_GET_LENGTH(line) == 0 || PyUnicode_READ_CHAR(line, 0) != '#') return PYTHON;  /* (not encoded) */
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(line, &n);
    if (!s) {  /* a lone surrogate: Python's */
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return ERROR;
        PyErr_Clear();
        return PYTHON;
    }
    if (n == 0 || s[0] != '#') return PYTHON;
    unsigned by_literal;
    if (literals_in(self, s, n, &by_literal)) return PYTHON;
    unsigned by_start = starts_of(s, n);
    if (!bench_hash_idle(self, s, n, by_start)) return PYTHON;
    *mask = by_start;
    PyObject *offer = v->emit->offer;
    if (offer == Py_None || !context_may_offer(s, n)) return OK;
    PyObject *got = call_line(offer, s, n, line, lineno);
    Py_XDECREF(got);
    return got ? OK : ERROR;
}
