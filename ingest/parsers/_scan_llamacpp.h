/* llama.cpp's per-request timing and slot lines in the native scanner (llamacpp.Parser, FORMATS §6).
 *
 * A llama.cpp server prints, after each request, `prompt eval time = ...`, `       eval time = ...`
 * and (speculative) `draft acceptance rate = ...` lines: each is one window of its own counter in
 * llamacpp.Parser (prompt_windows, eval_windows, slot_windows). native.py arms this part once a parse
 * (llamacpp_arm) with the parser; a line is read here when
 *   - it holds no reader's literal but one of llamacpp's `eval time` or `draft acceptance` (not
 *     `statistics`, whose branch feed() takes first and whose counters are Python's), and no STARTS
 *     but the Tagger's, whose tag it reads as read_line does (untagged "main" once it is set, or a
 *     label it knows);
 *   - the readers' first records are set (`llamacpp` among the result's formats, looked up there:
 *     no flag of its own; an `engine` setting): _seen changes nothing then;
 *   - and it is _eval's `[prompt ]eval time = X ms / N tokens ( Y ms per token, Z tokens per second)`
 *     or _slot's `draft acceptance[ rate] = R ( A accepted / G generated)` with no mean length or
 *     per-position rates after it, matched where the literal first is (a later match is Python's),
 *     every number in the plain grammar (counts of at most 18 digits, a double's exact integers).
 * Anything else is declined (read_line goes on as before: Python's). */

struct llama_state {
    int armed;
    PyObject *parser, *k_formats, *k_result, *name;  /* the llamacpp.Parser, "formats", "result", "llamacpp" */
    int lit_eval, lit_slot;  /* its literals `eval time` and `draft acceptance` (-1: none) */
    int s_source, s_slot, s_prompt, s_throughput, s_ms, s_accepted, s_drafted, s_rate;
};

static void llama_release(struct llama_state *ls) {
    if (!ls) return;
    Py_CLEAR(ls->parser);
    Py_CLEAR(ls->k_formats);
    Py_CLEAR(ls->k_result);
    Py_CLEAR(ls->name);
    free(ls);
}

/* llamacpp_arm(parser): once a parse, before its first scan (native.parse_chunks). */
static PyObject *Scanner_llamacpp_arm(Scanner *self, PyObject *args) {
    if (not_ready(self)) return NULL;
    PyObject *parser;
    if (!PyArg_ParseTuple(args, "O", &parser)) return NULL;
    static const char *names[] = {"prompt_windows", "eval_windows", "slot_windows"};
    for (int i = 0; i < 3; i++) {  /* the parser's counters are ints */
        PyObject *w = PyObject_GetAttrString(parser, names[i]);
        if (!w) return NULL;
        int ok = PyLong_CheckExact(w);
        Py_DECREF(w);
        if (!ok) { PyErr_Format(PyExc_TypeError, "%s must be an int", names[i]); return NULL; }
    }
    struct vllm_state *v = vllm_state_of(self);
    if (!v) return NULL;
    llama_release(v->llama);
    struct llama_state *ls = v->llama = calloc(1, sizeof(*ls));
    if (!ls) { PyErr_NoMemory(); return NULL; }
    ls->lit_eval = ls->lit_slot = -1;
    for (int k = 0; k < self->nlit; k++) {
        if (self->lit_reader[k] != R_LLAMACPP) continue;
        if (self->lit_len[k] == 9 && memeq(self->lit[k], "eval time", 9)) ls->lit_eval = k;
        if (self->lit_len[k] == 16 && memeq(self->lit[k], "draft acceptance", 16)) ls->lit_slot = k;
    }
    static const char *metrics[] = {"llamacpp", "llamacpp_slot", "prompt_throughput_tok_s", "throughput_tok_s",
                                    "decode_ms_per_token", "accepted_tokens", "draft_tokens", "draft_acceptance_rate"};
    int *ids[] = {&ls->s_source, &ls->s_slot, &ls->s_prompt, &ls->s_throughput, &ls->s_ms, &ls->s_accepted,
                  &ls->s_drafted, &ls->s_rate};
    for (int i = 0; i < 8; i++)
        if ((*ids[i] = intern_str(self, metrics[i], (Py_ssize_t)strlen(metrics[i]))) < 0) return NULL;
    ls->k_formats = PyUnicode_InternFromString("formats");
    ls->k_result = PyUnicode_InternFromString("result");
    ls->name = PyUnicode_InternFromString("llamacpp");
    if (!ls->k_formats || !ls->k_result || !ls->name) return NULL;
    Py_INCREF(parser);
    ls->parser = parser;
    ls->armed = 1;
    Py_RETURN_NONE;
}

/* `\d+(?:\.\d+)?` at s[*i] (float() of it, at most 40 characters), moved past: 0 when none. */
static int llama_number(const char *s, Py_ssize_t n, Py_ssize_t *i, double *out) {
    Py_ssize_t k = engine_number(s + *i, n - *i, out);
    if (!k) return 0;
    *i += k;
    return 1;
}

/* `\d+` at s[*i] of at most 18 significant digits and 2**53 (read_int's bound; an int a double
 * holds), moved past: 0 when none or longer. */
static int llama_count(const char *s, Py_ssize_t n, Py_ssize_t *i, long long *out) {
    Py_ssize_t j = *i, sig = 0;
    long long x = 0;
    while (j < n && is_digit(s[j])) {
        if (x || s[j] != '0') sig++;
        if (sig > 18) return 0;
        x = x * 10 + (s[j] - '0');
        j++;
    }
    if (j == *i || (double)x > EXACT_INT_MAX) return 0;
    *out = x, *i = j;
    return 1;
}

static void llama_spaces(const char *s, Py_ssize_t n, Py_ssize_t *i) {
    while (*i < n && is_space(s[*i])) (*i)++;
}

/* `\s*c\s*` at s[*i], moved past: 0 when the character is not there. */
static int llama_sep(const char *s, Py_ssize_t n, Py_ssize_t *i, char c) {
    llama_spaces(s, n, i);
    if (*i >= n || s[*i] != c) return 0;
    (*i)++;
    llama_spaces(s, n, i);
    return 1;
}

static int llama_lit(const char *s, Py_ssize_t n, Py_ssize_t *i, const char *p) {
    Py_ssize_t k = (Py_ssize_t)strlen(p);
    if (!starts_len(s + *i, n - *i, p, k)) return 0;
    *i += k;
    return 1;
}

/* The parser's window counter `name` + 1, stored: -1 on error. */
static long llama_window(struct llama_state *ls, const char *name) {
    PyObject *w = PyObject_GetAttrString(ls->parser, name);
    if (!w) return -1;
    long window = PyLong_CheckExact(w) ? PyLong_AsLong(w) : -1;
    Py_DECREF(w);
    if (window < 0 || window >= LONG_MAX - 1) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "%s must be an int", name);
        return -1;
    }
    PyObject *nw = PyLong_FromLong(window + 1);
    int bad = !nw || PyObject_SetAttrString(ls->parser, name, nw) < 0;
    Py_XDECREF(nw);
    return bad ? -1 : window + 1;
}

/* Whether `llamacpp` is among the result's formats (_seen adds nothing then): 1, 0, -1 on error. */
static int llama_seen(struct llama_state *ls) {
    PyObject *result = PyObject_GetAttr(ls->parser, ls->k_result);
    PyObject *formats = result ? PyObject_GetAttr(result, ls->k_formats) : NULL;
    Py_XDECREF(result);
    if (!formats) return -1;
    int has = PyList_CheckExact(formats) ? PySequence_Contains(formats, ls->name) : 0;
    Py_DECREF(formats);
    return has;
}

/* A line read_line found llamacpp's literal on (and no other reader's but the Tagger's STARTS):
 * OK, PYTHON, ERROR, or DECLINE (read_line goes on as before). */
static int llamacpp_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, Eagle *e,
                         PyObject *labels, int flags, uint64_t lits, unsigned by_literal, unsigned by_start) {
    struct llama_state *ls = self->vllm ? self->vllm->llama : NULL;
    if (!ls || !ls->armed || e->in_block || by_literal != BIT(R_LLAMACPP) || by_start & ~BIT(R_TAGGER)) return DECLINE;
    int eval = ls->lit_eval >= 0 && (lits >> ls->lit_eval & 1), slot = ls->lit_slot >= 0 && (lits >> ls->lit_slot & 1);
    uint64_t other = lits & ~(eval ? 1ull << ls->lit_eval : 0) & ~(slot ? 1ull << ls->lit_slot : 0);
    for (uint64_t o = other; o; o &= o - 1)
        if (self->lit_reader[__builtin_ctzll(o)] >= 0) return DECLINE;  /* `statistics`, another reader's */
    if (!eval && !slot) return DECLINE;
    if (!(flags & F_ENGINE)) return PYTHON;  /* _seen sets the engine */
    /* feed(): `draft acceptance` first, then `eval time` */
    const char *lit = slot ? "draft acceptance" : "eval time";
    const char *at = find(s, n, lit, (Py_ssize_t)strlen(lit));
    if (!at) return DECLINE;
    Py_ssize_t i = at - s + (Py_ssize_t)strlen(lit);
    int metric[3], count = 0, source = ls->s_source;
    double value[3];
    const char *counter;
    if (slot) {
        /* _SLOT: draft acceptance(?: rate)?\s*=\s*(\d+(?:\.\d+)?)\s*\(\s*(\d+) accepted\s*[/]\s*(\d+) generated\) */
        double rate;
        long long accepted, generated;
        llama_lit(s, n, &i, " rate");
        if (!llama_sep(s, n, &i, '=') || !llama_number(s, n, &i, &rate) || !llama_sep(s, n, &i, '(')
            || !llama_count(s, n, &i, &accepted) || !llama_lit(s, n, &i, " accepted") || !llama_sep(s, n, &i, '/')
            || !llama_count(s, n, &i, &generated) || !llama_lit(s, n, &i, " generated)")) return PYTHON;
        /* a mean length or per-position rates after it: Python's */
        if (find(s + i, n - i, "mean acc", 8) || find(s + i, n - i, "#acc rate/pos", 13)
            || find(s + i, n - i, "acceptance rate per position", 28)) return PYTHON;
        metric[count] = ls->s_accepted, value[count++] = (double)accepted;
        metric[count] = ls->s_drafted, value[count++] = (double)generated;
        if (generated) metric[count] = ls->s_rate, value[count++] = round6((double)accepted / (double)generated);
        source = ls->s_slot, counter = "slot_windows";
    } else {
        /* _EVAL: (prompt )?eval time\s*=\s*(\d+(?:\.\d+)?) ms\s*[/]\s*(\d+) (?:tokens|runs)\s*\(\s*
         * (\d+(?:\.\d+)?) ms per token,\s*(\d+(?:\.\d+)?) tokens per second\) */
        int prompt = at - s >= 7 && memeq(at - 7, "prompt ", 7);
        double ms, per_token, per_s;
        long long tokens;
        if (!llama_sep(s, n, &i, '=') || !llama_number(s, n, &i, &ms) || !llama_lit(s, n, &i, " ms")
            || !llama_sep(s, n, &i, '/') || !llama_count(s, n, &i, &tokens) || !llama_lit(s, n, &i, " ")
            || !(llama_lit(s, n, &i, "tokens") || llama_lit(s, n, &i, "runs")) || !llama_sep(s, n, &i, '(')
            || !llama_number(s, n, &i, &per_token) || !llama_lit(s, n, &i, " ms per token,")) return PYTHON;
        llama_spaces(s, n, &i);
        if (!llama_number(s, n, &i, &per_s) || !llama_lit(s, n, &i, " tokens per second)")) return PYTHON;
        if (!isfinite(per_s)) return PYTHON;
        if (prompt) {
            metric[count] = ls->s_prompt, value[count++] = per_s;
            counter = "prompt_windows";
        } else {
            metric[count] = ls->s_throughput, value[count++] = per_s;
            metric[count] = ls->s_ms, value[count++] = per_token;
            counter = "eval_windows";
        }
    }
    int seen = llama_seen(ls);
    if (seen <= 0) return seen < 0 ? ERROR : PYTHON;  /* the first record: Python's */
    /* the Tagger: as read_line reads it */
    if (by_literal & BIT(R_TAGGER)) return PYTHON;
    int label;
    int tag = tagger_tag(self, s, n, labels, &label);
    if (tag < 0) return ERROR;
    if (tag == TAG_PYTHON || (tag == TAG_MAIN && !(flags & F_MAIN))) return PYTHON;
    int process = tag == TAG_KNOWN ? label : self->s_main;
    long window = llama_window(ls, counter);
    if (window < 0) return ERROR;
    for (int k = 0; k < count; k++)
        if (add_metric(self, metric[k], value[k], window, lineno, source, self->s_empty, process) < 0) return ERROR;
    /* offered after the readers, as the engines do (`draft acceptance` holds one of context.WORDS) */
    return bench_offer(self->vllm, s, n, line, lineno) < 0 ? ERROR : OK;
}
