/* llama.cpp's per-request timing and slot lines in the native scanner (llamacpp.Parser, FORMATS §6).
 *
 * A llama.cpp server prints, after each request, `prompt eval time = ...`, `       eval time = ...`
 * and (speculative) `draft acceptance rate = ...` lines: each is one window of its own counter in
 * llamacpp.Parser (prompt_windows, eval_windows, slot_windows). native.py arms this part once a parse
 * (llamacpp_arm) with the parser; a line is read here when
 *   - it holds no reader's literal but one of llamacpp's `eval time` or `draft acceptance` (a line
 *     with `statistics`, whose branch feed() takes first, is llama_statistics', below), and no STARTS
 *     but the Tagger's (and nccl_tests' where that reader does nothing with it), whose tag it reads
 *     as read_line does (untagged "main" once it is set, or a label it knows);
 *   - the readers' first records are set (`llamacpp` among the result's formats, looked up there:
 *     no flag of its own; an `engine` setting): _seen changes nothing then;
 *   - and it is _eval's `[prompt ]eval time = X ms / N tokens ( Y ms per token, Z tokens per second)`
 *     or _slot's `draft acceptance[ rate] = R ( A accepted / G generated)` with no mean length or
 *     per-position rates after it, matched where the literal first is (a later match is Python's),
 *     every number in the plain grammar (counts of at most 18 digits, a double's exact integers).
 * Anything else is declined (read_line goes on as before: Python's). */

#define STAT_TYPES 64  /* draft types a parse holds at most, read here (more: Python's) */

struct llama_state {
    int armed;
    /* the rows of the draft-type table last published here and the stats dict each was made of: a type
     * whose stats are the same object (stats dicts are never changed once stored) gets its row again
     * rather than a copy, as equal as _publish's fresh one (strong references: identities stay unique) */
    int nrows;
    PyObject *row_stats[STAT_TYPES], *rows[STAT_TYPES];
    PyObject *parser, *k_formats, *k_result, *name;  /* the llamacpp.Parser, "formats", "result", "llamacpp" */
    int lit_eval, lit_slot, lit_stat;  /* its literals `eval time`, `draft acceptance`, `statistics` (-1: none) */
    int s_source, s_slot, s_prompt, s_throughput, s_ms, s_accepted, s_drafted, s_rate;
    int s_counts[5];  /* a statistics line's metrics: gen_drafts, acc_drafts, gen_tokens, acc_tokens, draft_calls */
};

static void llama_release(struct llama_state *ls) {
    if (!ls) return;
    Py_CLEAR(ls->parser);
    Py_CLEAR(ls->k_formats);
    Py_CLEAR(ls->k_result);
    Py_CLEAR(ls->name);
    for (int i = 0; i < ls->nrows; i++) {
        Py_CLEAR(ls->row_stats[i]);
        Py_CLEAR(ls->rows[i]);
    }
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
    ls->lit_eval = ls->lit_slot = ls->lit_stat = -1;
    for (int k = 0; k < self->nlit; k++) {
        if (self->lit_reader[k] != R_LLAMACPP) continue;
        if (self->lit_len[k] == 9 && memeq(self->lit[k], "eval time", 9)) ls->lit_eval = k;
        if (self->lit_len[k] == 16 && memeq(self->lit[k], "draft acceptance", 16)) ls->lit_slot = k;
        if (self->lit_len[k] == 10 && memeq(self->lit[k], "statistics", 10)) ls->lit_stat = k;
    }
    static const char *metrics[] = {"llamacpp", "llamacpp_slot", "prompt_throughput_tok_s", "throughput_tok_s",
                                    "decode_ms_per_token", "accepted_tokens", "draft_tokens", "draft_acceptance_rate"};
    int *ids[] = {&ls->s_source, &ls->s_slot, &ls->s_prompt, &ls->s_throughput, &ls->s_ms, &ls->s_accepted,
                  &ls->s_drafted, &ls->s_rate};
    for (int i = 0; i < 8; i++)
        if ((*ids[i] = intern_str(self, metrics[i], (Py_ssize_t)strlen(metrics[i]))) < 0) return NULL;
    static const char *counts[] = {"gen_drafts", "acc_drafts", "gen_tokens", "acc_tokens", "draft_calls"};
    for (int i = 0; i < 5; i++)
        if ((ls->s_counts[i] = intern_str(self, counts[i], (Py_ssize_t)strlen(counts[i]))) < 0) return NULL;
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
    PyObject *w = get_named(ls->parser, name);
    if (!w) return -1;
    long window = PyLong_CheckExact(w) ? PyLong_AsLong(w) : -1;
    Py_DECREF(w);
    if (window < 0 || window >= LONG_MAX - 1) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "%s must be an int", name);
        return -1;
    }
    PyObject *nw = PyLong_FromLong(window + 1);
    int bad = !nw || set_named(ls->parser, name, nw) < 0;
    Py_XDECREF(nw);
    return bad ? -1 : window + 1;
}

/* The Tagger on the line, as read_line reads it: OK with the line's process, PYTHON or ERROR. */
static int llama_process(Scanner *self, const char *s, Py_ssize_t n, PyObject *labels, int flags, unsigned by_literal,
                         int *process) {
    if (by_literal & BIT(R_TAGGER)) return PYTHON;
    int label;
    int tag = tagger_tag(self, s, n, labels, &label);
    if (tag < 0) return ERROR;
    if (tag == TAG_PYTHON || (tag == TAG_MAIN && !(flags & F_MAIN))) return PYTHON;
    *process = tag == TAG_KNOWN ? label : self->s_main;
    return OK;
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

static int llama_statistics(Scanner *self, struct llama_state *ls, const char *s, Py_ssize_t n, PyObject *line,
                            int64_t lineno, PyObject *labels, int flags, unsigned by_literal);

/* A line read_line found llamacpp's literal on (and no other reader's but the Tagger's STARTS):
 * OK, PYTHON, ERROR, or DECLINE (read_line goes on as before). */
static int llamacpp_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, Eagle *e,
                         PyObject *labels, int flags, uint64_t lits, unsigned by_literal, unsigned by_start) {
    struct llama_state *ls = self->vllm ? self->vllm->llama : NULL;
    if (!ls || !ls->armed || e->in_block || by_literal != BIT(R_LLAMACPP) || by_start & ~BIT(R_TAGGER)) return DECLINE;
    int eval = ls->lit_eval >= 0 && (lits >> ls->lit_eval & 1), slot = ls->lit_slot >= 0 && (lits >> ls->lit_slot & 1);
    int stat = ls->lit_stat >= 0 && (lits >> ls->lit_stat & 1);
    uint64_t other = lits & ~(eval ? 1ull << ls->lit_eval : 0) & ~(slot ? 1ull << ls->lit_slot : 0)
        & ~(stat ? 1ull << ls->lit_stat : 0);
    for (uint64_t o = other; o; o &= o - 1)
        if (self->lit_reader[__builtin_ctzll(o)] >= 0) return DECLINE;  /* another reader's */
    /* feed(): `statistics` first (its branch alone, whatever else the line holds) */
    if (stat) return llama_statistics(self, ls, s, n, line, lineno, labels, flags, by_literal);
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
    int process, tagged = llama_process(self, s, n, labels, flags, by_literal, &process);
    if (tagged != OK) return tagged;
    long window = llama_window(ls, counter);
    if (window < 0) return ERROR;
    for (int k = 0; k < count; k++)
        if (add_metric(self, metric[k], value[k], window, lineno, source, self->s_empty, process) < 0) return ERROR;
    /* offered after the readers, as the engines do (`draft acceptance` holds one of context.WORDS) */
    return offer_line(self->vllm, s, n, line, lineno, 1) < 0 ? ERROR : OK;  /* llamacpp's literal is on it */
}

/* ---- `statistics` lines: llamacpp.Parser._statistics --------------------------------------------
 *
 * A llama.cpp server prints one `statistics <type>: #calls(b,g,a) = ..., #gen drafts = ..., ...` line
 * per draft type after each request. One is read here when llamacpp_line would read a timing line
 * (the literal `statistics` is llamacpp's only one on it, the Tagger's tag read) and
 *   - it is ASCII, and _STATISTICS, _COUNTS, _CALLS and _DURATIONS match as the regexes do, every
 *     count read_int's (at most 18 significant digits) and a double's exact integer, every
 *     duration float()'s (40 characters at most); no mean length, no per-position rates (Python's);
 *   - the type's first records are set: `llamacpp` among the formats, `engine`, `spec.algorithm` and
 *     llamacpp.TYPES_KEY set; the parser's state is of the types its code gives it (windows an
 *     int, group a list, types and base dicts of {"counts": {name: int}, ...} stats, durations a
 *     tuple of 3 floats), the draft type that drafted most ASCII.
 * Then its writes are _statistics': the window (a type printed again, or the first, starts one), the
 * type's stats in types and base, the TYPES_KEY table rebuilt, `spec.algorithm` where llamacpp set it,
 * and _window's records. A line without counts changes nothing (read). */


static const char *STAT_COUNTS[] = {"gen_drafts", "acc_drafts", "gen_tokens", "acc_tokens"};
static const char *STAT_LABELS[] = {"#gen drafts", "#acc drafts", "#gen tokens", "#acc tokens"};
static const char *STAT_CALLS[] = {"calls_begin", "calls_generate", "calls_accept"};

/* `\s*c\s*`-free: Python's \s* at s[*i] (ASCII) */
static Py_ssize_t stat_spaces(const char *s, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && is_space(s[i])) i++;
    return i;
}

/* `\d+` at s[*i] read as a count: 1 moved past, 0 no digit there, -1 a count read_int or a double
 * does not hold (Python's). */
static int stat_count(const char *s, Py_ssize_t n, Py_ssize_t *i, long long *out) {
    if (*i >= n || !is_digit(s[*i])) return 0;
    return llama_count(s, n, i, out) ? 1 : -1;
}

/* `\d+(?:\.\d+)?` at s[*i] read as float(): 1 moved past, 0 no digit there, -1 too long (Python's). */
static int stat_float(const char *s, Py_ssize_t n, Py_ssize_t *i, double *out) {
    if (*i >= n || !is_digit(s[*i])) return 0;
    return llama_number(s, n, i, out) ? 1 : -1;
}

/* _COUNTS[key].search(body): `label\s*=\s*(\d+)` at its first place that matches: 1 with the count,
 * 0 none, -1 Python's. */
static int stat_field(const char *b, Py_ssize_t n, const char *label, long long *out) {
    Py_ssize_t k = (Py_ssize_t)strlen(label);
    for (const char *p = b; (p = find(p, b + n - p, label, k)); p++) {
        Py_ssize_t i = stat_spaces(b, n, p - b + k);
        if (i >= n || b[i] != '=') continue;
        i = stat_spaces(b, n, i + 1);
        int got = stat_count(b, n, &i, out);
        if (got) return got;
    }
    return 0;
}

/* _CALLS.search(body): 1 with the named calls (*named: 1 calls_generate alone, 3 begin, generate,
 * accept), 0 none, -1 Python's. */
static int stat_calls(const char *b, Py_ssize_t n, long long calls[3], int *named) {
    for (const char *p = b; (p = find(p, b + n - p, "#calls", 6)); p++) {
        Py_ssize_t i = p - b + 6;
        int bga = starts_len(b + i, n - i, "(b,g,a)", 7);
        if (bga) i += 7;
        i = stat_spaces(b, n, i);
        if (i >= n || b[i] != '=') continue;
        i = stat_spaces(b, n, i + 1);
        Py_ssize_t d = i;
        while (i < n && is_digit(b[i])) i++;
        if (i == d) continue;
        /* (?:\s+(\d+)\s+(\d+))? */
        Py_ssize_t g[2][2], j = i;
        int three = 1;
        for (int k = 0; k < 2 && three; k++) {
            Py_ssize_t sp = stat_spaces(b, n, j);
            if (sp == j) { three = 0; break; }
            g[k][0] = j = sp;
            while (j < n && is_digit(b[j])) j++;
            if (j == g[k][0]) three = 0;
            g[k][1] = j;
        }
        Py_ssize_t at = d;
        if (bga && three) {
            Py_ssize_t a1 = g[0][0], a2 = g[1][0];
            if (stat_count(b, n, &at, &calls[0]) < 0 || stat_count(b, n, &a1, &calls[1]) < 0
                || stat_count(b, n, &a2, &calls[2]) < 0) return -1;
            *named = 3;
        } else {
            if (stat_count(b, n, &at, &calls[1]) < 0) return -1;
            *named = 1;
        }
        return 1;
    }
    return 0;
}

/* _DURATIONS.search(body): 1 with the three totals, 0 none, -1 Python's. */
static int stat_durations(const char *b, Py_ssize_t n, double dur[3]) {
    for (const char *p = b; (p = find(p, b + n - p, "dur(b,g,a)", 10)); p++) {
        Py_ssize_t i = stat_spaces(b, n, p - b + 10);
        if (i >= n || b[i] != '=') continue;
        i = stat_spaces(b, n, i + 1);
        int ok = 1;
        for (int k = 0; k < 3 && ok; k++) {
            if (k) {
                if (i >= n || b[i] != ',') { ok = 0; break; }
                i = stat_spaces(b, n, i + 1);
            }
            int got = stat_float(b, n, &i, &dur[k]);
            if (got < 0) return -1;
            ok = got;
        }
        if (!ok) continue;
        i = stat_spaces(b, n, i);
        if (starts_len(b + i, n - i, "ms", 2)) return 1;
    }
    return 0;
}

/* _STATISTICS.search(line) on an ASCII line: 1 with the type's place and the body's start, 0 none. */
static int stat_match(const char *s, Py_ssize_t n, Py_ssize_t *impl, Py_ssize_t *impl_end, Py_ssize_t *body) {
    for (const char *p = s; (p = find(p, s + n - p, "statistics", 10)); p++) {
        if (p > s && is_word(p[-1])) continue;  /* \b */
        Py_ssize_t i = p - s + 10, j = stat_spaces(s, n, i);
        if (j == i || j >= n || !is_alpha(s[j])) continue;
        Py_ssize_t k = j + 1;
        while (k < n && (is_word(s[k]) || s[k] == '.' || s[k] == '-')) k++;
        if (k >= n || s[k] != ':') continue;
        *impl = j, *impl_end = k, *body = stat_spaces(s, n, k + 1);
        return 1;
    }
    return 0;
}

/* A value of a stats dict's counts: an int a long long holds (1), else 0. */
static int stat_int(PyObject *o, long long *out) {
    if (!o) { *out = 0; return 1; }
    if (!PyLong_CheckExact(o)) return 0;
    int overflow;
    *out = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (*out == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    return !overflow;
}

/* A stats dict of the parser's (types', base's) as _statistics makes one: its counts (a dict of ints)
 * and durations (NULL, or a tuple of 3 floats): 1, 0 when of another shape (Python's). Borrowed. */
static int stat_shape(PyObject *stats, PyObject **counts, PyObject **dur) {
    if (!PyDict_CheckExact(stats)) return 0;
    *counts = DICT_GET(stats, "counts");
    *dur = DICT_GET(stats, "dur");
    if (!*counts || !PyDict_CheckExact(*counts)) return 0;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    long long x;
    while (PyDict_Next(*counts, &pos, &key, &value))
        if (!PyUnicode_CheckExact(key) || !stat_int(value, &x) || x < 0 || (double)x > EXACT_INT_MAX) return 0;
    if (*dur && !(PyTuple_CheckExact(*dur) && PyTuple_GET_SIZE(*dur) == 3 && PyFloat_CheckExact(PyTuple_GET_ITEM(*dur, 0))
                  && PyFloat_CheckExact(PyTuple_GET_ITEM(*dur, 1)) && PyFloat_CheckExact(PyTuple_GET_ITEM(*dur, 2))))
        return 0;
    return 1;
}

/* The parser's attribute `name` (a new reference) when of `type` exactly, else NULL (*bad 1: Python's;
 * an error set: -1). */
static PyObject *stat_attr(PyObject *o, const char *name, PyTypeObject *type, int *bad) {
    PyObject *v = get_named(o, name);
    if (!v) { *bad = -1; return NULL; }
    if (Py_TYPE(v) != type) { Py_DECREF(v); *bad = 1; return NULL; }
    return v;
}

/* _algorithm(impl) of an ASCII draft type into out (at most `room` bytes): its length, -1 too long. */
static Py_ssize_t stat_algorithm(const char *impl, Py_ssize_t len, char *out, Py_ssize_t room) {
    char low[128];
    if (len >= (Py_ssize_t)sizeof(low) || len >= room) return -1;
    for (Py_ssize_t i = 0; i < len; i++) low[i] = (char)(impl[i] >= 'A' && impl[i] <= 'Z' ? impl[i] + 32 : impl[i]);
    const char *fixed = find(low, len, "mtp", 3) ? "MTP" : find(low, len, "eagle3", 6) ? "EAGLE3"
        : starts_len(low, len, "ngram", 5) ? "NGRAM" : NULL;
    if (fixed) {
        memcpy(out, fixed, strlen(fixed));
        return (Py_ssize_t)strlen(fixed);
    }
    Py_ssize_t from = starts_len(low, len, "draft-", 6) ? 6 : 0;
    for (Py_ssize_t i = from; i < len; i++)
        out[i - from] = low[i] == '-' ? '_' : (char)(low[i] >= 'a' && low[i] <= 'z' ? low[i] - 32 : low[i]);
    return len - from;
}

struct stat_line {  /* what the line says: its draft type, counts and durations */
    const char *impl; Py_ssize_t impl_len;
    int ncounts; const char *names[7]; long long values[7];
    int has_dur; double dur[3];
};

/* The writes of a line read (the checks passed): _statistics' and _publish's on the parser and result,
 * _window's records. 0, or -1 on error. */
static int stat_write(Scanner *self, struct llama_state *ls, const struct stat_line *st, PyObject *impl,
                      PyObject *types, PyObject *base, PyObject *group, PyObject *settings, PyObject *table_setting,
                      PyObject *algorithm, long window, int64_t lineno, int process) {
    PyObject *counts = PyDict_New(), *stats = PyDict_New(), *dur = NULL, *ln = PyLong_FromLongLong(lineno);
    int bad = !counts || !stats || !ln;
    for (int k = 0; !bad && k < st->ncounts; k++) {
        PyObject *v = PyLong_FromLongLong(st->values[k]);
        bad = !v || dict_set_named(counts, st->names[k], v) < 0;
        Py_XDECREF(v);
    }
    if (!bad && st->has_dur) bad = !(dur = Py_BuildValue("(ddd)", st->dur[0], st->dur[1], st->dur[2]));
    bad = bad || DICT_SET(stats, "counts", counts) < 0 || DICT_SET(stats, "mean", Py_None) < 0
        || DICT_SET(stats, "line", ln) < 0 || (dur && DICT_SET(stats, "dur", dur) < 0);
    /* before = base.get(impl), read before it is replaced */
    PyObject *before = bad ? NULL : PyDict_GetItem(base, impl);
    Py_XINCREF(before);
    if (!bad) {  /* the window: a type printed again (or the first) starts one */
        int again = PyList_GET_SIZE(group) == 0 ? 1 : PySequence_Contains(group, impl);
        if (again < 0) bad = 1;
        else if (again) {
            PyObject *fresh = PyList_New(0), *w = PyLong_FromLong(window);
            bad = !fresh || !w || PyList_Append(fresh, impl) < 0 || SET_ATTR(ls->parser, "group", fresh) < 0
                || SET_ATTR(ls->parser, "windows", w) < 0;
            Py_XDECREF(fresh);
            Py_XDECREF(w);
        } else {
            bad = PyList_Append(group, impl) < 0;
        }
    }
    bad = bad || PyDict_SetItem(types, impl, stats) < 0 || PyDict_SetItem(base, impl, stats) < 0;
    /* _publish: the table of every type's latest counters, and the algorithm */
    PyObject *table = bad ? NULL : PyDict_New();
    bad = bad || !table;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    static const char *DUR_KEYS[] = {"dur_begin_ms", "dur_generate_ms", "dur_accept_ms"};
    PyObject *row_stats[STAT_TYPES], *rows[STAT_TYPES];  /* this table's, for the next line's */
    int nrows = 0;
    while (!bad && PyDict_Next(types, &pos, &key, &value)) {
        PyObject *c, *d, *row = NULL;
        for (int i = 0; i < ls->nrows && !row; i++)  /* the same stats under the same type: its last row */
            if (ls->row_stats[i] == value && DICT_GET(ls->rows[i], "type") == key) row = ls->rows[i];
        if (row) {
            Py_INCREF(row);
        } else {
            row = PyDict_New();
            bad = !row || !stat_shape(value, &c, &d) || DICT_SET(row, "type", key) < 0 || PyDict_Update(row, c) < 0;
            for (int k = 0; !bad && d && k < 3; k++)
                bad = dict_set_named(row, DUR_KEYS[k], PyTuple_GET_ITEM(d, k)) < 0;
        }
        bad = bad || nrows >= STAT_TYPES || PyDict_SetItem(table, key, row) < 0;
        if (!bad) {
            Py_INCREF(value);
            row_stats[nrows] = value, rows[nrows++] = row;
        } else {
            Py_XDECREF(row);
        }
        if (bad && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "a draft type's stats changed shape");
    }
    for (int i = 0; i < ls->nrows; i++) {  /* the last table's dropped, this one's kept (even on error: owned) */
        Py_DECREF(ls->row_stats[i]);
        Py_DECREF(ls->rows[i]);
    }
    memcpy(ls->row_stats, row_stats, sizeof(row_stats[0]) * (size_t)nrows);
    memcpy(ls->rows, rows, sizeof(rows[0]) * (size_t)nrows);
    ls->nrows = nrows;
    bad = bad || SET_ATTR(table_setting, "value", table) < 0
        || SET_ATTR(table_setting, "line", ln) < 0;
    if (!bad && algorithm) {  /* a new Setting, as result.set(..., overwrite=True) makes */
        PyObject *current = DICT_GET(settings, "spec.algorithm");  /* borrowed; checked before */
        PyObject *made = current ? PyObject_CallFunction((PyObject *)Py_TYPE(current), "sOLO", "spec.algorithm",
                                                         algorithm, (long long)lineno, ls->name) : NULL;
        bad = !made || DICT_SET(settings, "spec.algorithm", made) < 0;
        Py_XDECREF(made);
    }
    Py_XDECREF(table);
    Py_XDECREF(dur);
    Py_XDECREF(ln);
    Py_XDECREF(stats);
    Py_XDECREF(counts);
    if (bad) { Py_XDECREF(before); return -1; }
    /* _window: this type's share since its last line */
    PyObject *old = NULL, *old_dur = NULL;
    if (before && !stat_shape(before, &old, &old_dur)) {
        Py_DECREF(before);
        PyErr_SetString(PyExc_RuntimeError, "a draft type's base stats changed shape");
        return -1;
    }
    long long delta[7];
    int restarted = 0;
    for (Py_ssize_t p = 0; old && PyDict_Next(old, &p, &key, &value);) {
        long long was = 0, now = 0;
        stat_int(value, &was);
        for (int k = 0; k < st->ncounts; k++)
            if (PyUnicode_CompareWithASCIIString(key, st->names[k]) == 0) now = st->values[k];
        restarted |= now < was;
    }
    for (int k = 0; k < st->ncounts; k++) {
        long long was = 0;
        PyObject *o = old && !restarted ? dict_get_named(old, st->names[k]) : NULL;
        stat_int(o, &was);
        delta[k] = st->values[k] - was;
    }
    double old_ms[3] = {0, 0, 0};
    for (int k = 0; k < 3 && old_dur && !restarted; k++) old_ms[k] = PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(old_dur, k));
    Py_XDECREF(before);
#define DELTA(name, into) do { into = 0; for (int k_ = 0; k_ < st->ncounts; k_++) \
    if (!strcmp(st->names[k_], name)) into = delta[k_]; } while (0)
    long long drafted, gen_tokens;
    DELTA("gen_drafts", drafted);
    DELTA("gen_tokens", gen_tokens);
    if (!drafted) drafted = gen_tokens;
    if (!drafted) return 0;  /* this type drafted nothing since its last line (no mean: none read here) */
    static const char *ADDED[] = {"gen_drafts", "acc_drafts", "gen_tokens", "acc_tokens", "calls_generate"};
    for (int a = 0; a < 5; a++)
        for (int k = 0; k < st->ncounts; k++) {
            if (strcmp(st->names[k], ADDED[a])) continue;
            if (add_metric(self, ls->s_counts[a], round6((double)delta[k]), window, lineno, ls->s_source, self->s_empty,
                           process) < 0) return -1;
        }
    if (st->has_dur) {
        long long calls[3];
        for (int c = 0; c < 3; c++) DELTA(STAT_CALLS[c], calls[c]);
        if (!calls[0] && !calls[1] && !calls[2]) DELTA("gen_drafts", calls[1]);
        static const char *PHASES[] = {"begin", "generate", "accept"};
        for (int c = 0; c < 3; c++) {
            if (!calls[c]) continue;  /* ms per call of this type: `dur(b,g,a)` are total milliseconds */
            char name[160];
            int len = snprintf(name, sizeof(name), "%.*s %s", (int)st->impl_len, st->impl, PHASES[c]);
            int id = len > 0 && len < (int)sizeof(name) ? intern_str(self, name, len) : -1;
            if (id < 0) {
                if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a draft type's name too long");
                return -1;
            }
            if (add_phase_of(self, id, round6((st->dur[c] - old_ms[c]) / (double)calls[c]), NAN, window, lineno,
                             ls->s_source, process) < 0) return -1;
        }
    }
#undef DELTA
    return 0;
}

/* A `statistics` line (llamacpp_line's checks of the literals and STARTS passed): OK, PYTHON or ERROR. */
static int llama_statistics(Scanner *self, struct llama_state *ls, const char *s, Py_ssize_t n, PyObject *line,
                            int64_t lineno, PyObject *labels, int flags, unsigned by_literal) {
    for (Py_ssize_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return PYTHON;
    Py_ssize_t a, z, b;
    struct stat_line st = {0};
    if (stat_match(s, n, &a, &z, &b)) {
        const char *body = s + b;
        Py_ssize_t bn = n - b;
        if (z - a >= 120) return PYTHON;
        if (find(body, bn, "mean acc", 8) || find(body, bn, "#acc rate/pos", 13)
            || find(body, bn, "acceptance rate per position", 28)) return PYTHON;
        st.impl = s + a, st.impl_len = z - a;
        for (int k = 0; k < 4; k++) {
            int got = stat_field(body, bn, STAT_LABELS[k], &st.values[st.ncounts]);
            if (got < 0) return PYTHON;
            if (got) st.names[st.ncounts++] = STAT_COUNTS[k];
        }
        if (st.ncounts) {
            long long calls[3];
            int named = 0, got = stat_calls(body, bn, calls, &named);
            if (got < 0) return PYTHON;
            for (int c = named == 3 ? 0 : 1; got && c < (named == 3 ? 3 : 2); c++)
                st.names[st.ncounts] = STAT_CALLS[c], st.values[st.ncounts++] = calls[c];
            got = stat_durations(body, bn, st.dur);
            if (got < 0) return PYTHON;
            st.has_dur = got;
        }
    }
    int process, tagged = llama_process(self, s, n, labels, flags, by_literal, &process);
    if (tagged != OK) return tagged;
    if (st.ncounts) {
        if (!(flags & F_ENGINE)) return PYTHON;  /* _seen sets the engine */
        int seen = llama_seen(ls);
        if (seen <= 0) return seen < 0 ? ERROR : PYTHON;
        /* the parser's state and the settings _publish replaces: of the shapes its code makes, else Python's */
        int bad = 0;
        PyObject *w = stat_attr(ls->parser, "windows", &PyLong_Type, &bad);
        PyObject *group = bad ? NULL : stat_attr(ls->parser, "group", &PyList_Type, &bad);
        PyObject *types = bad ? NULL : stat_attr(ls->parser, "types", &PyDict_Type, &bad);
        PyObject *base = bad ? NULL : stat_attr(ls->parser, "base", &PyDict_Type, &bad);
        PyObject *result = bad ? NULL : PyObject_GetAttr(ls->parser, ls->k_result);
        PyObject *settings = result ? stat_attr(result, "settings", &PyDict_Type, &bad) : NULL;
        PyObject *impl = settings ? PyUnicode_FromStringAndSize(st.impl, st.impl_len) : NULL;
        PyObject *algorithm = NULL;
        if (!bad && !result) bad = -1;
        if (!bad && !impl) bad = -1;
        long window = 0;
        PyObject *table_setting = NULL;
        if (!bad) {
            window = PyLong_AsLong(w);
            if (window == -1 && PyErr_Occurred()) { PyErr_Clear(); bad = 1; }
            else if (window < 0 || window >= LONG_MAX - 1) bad = 1;
        }
        if (!bad) {
            int again = PyList_GET_SIZE(group) == 0 ? 1 : PySequence_Contains(group, impl);
            if (again < 0) bad = -1;
            else window += again;
        }
        if (!bad) {
            table_setting = DICT_GET(settings, "llamacpp.draft_types");  /* llamacpp.TYPES_KEY */
            PyObject *current = DICT_GET(settings, "spec.algorithm");
            PyObject *source = current ? GET_ATTR(current, "source") : NULL;
            if (current && !source) bad = -1;
            else if (!table_setting || !current || !PyUnicode_CheckExact(source)) bad = 1;
            /* overwrite only where llamacpp set it */
            int ours = !bad && PyUnicode_CompareWithASCIIString(source, "llamacpp") == 0;
            Py_XDECREF(source);
            if (!bad && (PyDict_GET_SIZE(types) >= STAT_TYPES || PyDict_GET_SIZE(base) >= STAT_TYPES)) bad = 1;
            /* every type's stats of _statistics' shape, and the one that drafted most (the first of those) */
            PyObject *key, *value, *dominant = NULL;
            long long best_acc = 0, best_gen = 0;
            Py_ssize_t pos = 0;
            while (!bad && PyDict_Next(types, &pos, &key, &value)) {
                PyObject *c, *d;
                long long acc = 0, gen = 0;
                if (!PyUnicode_CheckExact(key) || !stat_shape(value, &c, &d)) { bad = 1; break; }
                if (PyUnicode_Compare(key, impl) == 0) {  /* its counters are this line's */
                    for (int k = 0; k < st.ncounts; k++) {
                        if (!strcmp(st.names[k], "acc_tokens")) acc = st.values[k];
                        if (!strcmp(st.names[k], "gen_drafts")) gen = st.values[k];
                    }
                } else {
                    stat_int(DICT_GET(c, "acc_tokens"), &acc);
                    stat_int(DICT_GET(c, "gen_drafts"), &gen);
                }
                if (!dominant || acc > best_acc || (acc == best_acc && gen > best_gen))
                    dominant = key, best_acc = acc, best_gen = gen;
            }
            if (!bad && PyErr_Occurred()) bad = -1;
            PyObject *before = bad ? NULL : PyDict_GetItem(base, impl);
            PyObject *c, *d;
            if (before && !stat_shape(before, &c, &d)) bad = 1;
            int known = bad ? 1 : PyDict_Contains(types, impl);
            if (known < 0) bad = -1;
            if (!bad && !known) {  /* a new type: the last in types */
                long long acc = 0, gen = 0;
                for (int k = 0; k < st.ncounts; k++) {
                    if (!strcmp(st.names[k], "acc_tokens")) acc = st.values[k];
                    if (!strcmp(st.names[k], "gen_drafts")) gen = st.values[k];
                }
                if (!dominant || acc > best_acc || (acc == best_acc && gen > best_gen)) dominant = impl;
            }
            if (!bad && ours) {
                Py_ssize_t len;
                const char *name = PyUnicode_AsUTF8AndSize(dominant, &len);
                char alg[128];
                Py_ssize_t k = -1;
                if (!name) bad = -1;
                else if (!PyUnicode_IS_ASCII(dominant) || (k = stat_algorithm(name, len, alg, sizeof(alg))) < 0) bad = 1;
                else if (!(algorithm = PyUnicode_FromStringAndSize(alg, k))) bad = -1;
            }
        }
        if (!bad && stat_write(self, ls, &st, impl, types, base, group, settings, table_setting, algorithm, window, lineno,
                               process) < 0) bad = -1;
        Py_XDECREF(algorithm);
        Py_XDECREF(impl);
        Py_XDECREF(settings);
        Py_XDECREF(result);
        Py_XDECREF(base);
        Py_XDECREF(types);
        Py_XDECREF(group);
        Py_XDECREF(w);
        if (bad) return bad < 0 ? ERROR : PYTHON;
    }
    /* offered after the readers, as the engines do (`statistics` is one of context.WORDS) */
    return offer_line(self->vllm, s, n, line, lineno, 1) < 0 ? ERROR : OK;  /* llamacpp's literal is on it */
}
