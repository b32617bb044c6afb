/* The context watcher's offer() in C (context.Watcher.offer; included by _scan.c before _scan_nccl.h).
 *
 * The engines hand the Watcher every line they hand a reader: a line holding one of context.WORDS
 * (not _SKIP's, not a head dump's) becomes a candidate, an unread line unless a record, setting or
 * mark of its line strikes it off at the end. A line the scanner reads in C is offered here, as
 * offer() would take it, with no call into Python: WORDS, _skipped and the cap on candidates read
 * by hand, exactly (an ASCII line: offer() reads WORDS' case-blind words in its lower(), the same
 * matches). Bound by env_bind() to the parse's own Watcher (native.py; its `wanted` is every
 * reader's: the scanner's mask of a line, its Tagger bits aside); unbound, the line goes to
 * result.offer as before.
 */

typedef struct {
    PyObject *watcher;               /* the bound Watcher, NULL when none */
    PyObject *candidates, *dump_lines;  /* its sets (fetched each scan call) */
    Py_ssize_t max;                  /* context.MAX_CANDIDATES */
    int fetched;                     /* 0 not yet this call, 1 read, -1 unreadable (offer() is called) */
} context_fast;

static inline char ctx_lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* s[0:n] starts with the lower-case p[0:k], case-blind (ASCII). */
static int ctx_starts_ci(const char *s, Py_ssize_t n, const char *p, Py_ssize_t k) {
    if (n < k) return 0;
    for (Py_ssize_t i = 0; i < k; i++)
        if (ctx_lower(s[i]) != p[i]) return 0;
    return 1;
}

static inline int ctx_name_char(char c) { return (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_'; }

/* Where `[A-Z0-9_]+` from i ends (i when none). */
static Py_ssize_t ctx_name_end(const char *s, Py_ssize_t n, Py_ssize_t i) {
    while (i < n && ctx_name_char(s[i])) i++;
    return i;
}

/* context.WORDS.search(line) on an ASCII line. Every branch is a literal or a class run that
 * must be followed by a literal its class cannot hold, so no backtracking can find another match:
 *   throughput | acceptanc(e)? (len|rate) | Accept length | statistics +\S+: | Speculative
 *   | NCCL_[A-Z0-9_]+ set to | N(?<![\w.]N)CCL_[A-Z0-9_]+=
 *   | case-blind: avg bus bandwidth | specdecod | set by environment | [nr]ccl version */
static int context_words(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *p = s + i;
        Py_ssize_t left = n - i;
        switch (*p) {
        case 't':
            if (starts_len(p, left, "throughput", 10)) return 1;
            break;
        case 'a':
            if (starts_len(p, left, "acceptanc", 9)) {
                Py_ssize_t j = 9 + (left > 9 && p[9] == 'e');
                if (starts_len(p + j, left - j, " len", 4) || starts_len(p + j, left - j, " rate", 5)) return 1;
            }
            break;
        case 'A':
            if (starts_len(p, left, "Accept length", 13)) return 1;
            break;
        case 's':
            if (starts_len(p, left, "statistics ", 11)) {
                Py_ssize_t j = 11;
                while (j < left && p[j] == ' ') j++;
                /* \S+: -- the run of non-spaces holds a ':' after its first character */
                for (Py_ssize_t k = j + 1; k < left && !is_space(p[k]); k++)
                    if (p[k] == ':' && !is_space(p[j])) return 1;
            }
            break;
        case 'S':
            if (starts_len(p, left, "Speculative", 11)) return 1;
            break;
        case 'N':
            if (starts_len(p, left, "NCCL_", 5)) {
                Py_ssize_t j = ctx_name_end(p, left, 5);
                if (j > 5 && starts_len(p + j, left - j, " set to ", 8)) return 1;
                if (j > 5 && j < left && p[j] == '=' && (i == 0 || !(is_word(s[i - 1]) || s[i - 1] == '.'))) return 1;
            }
            break;
        default:
            break;
        }
        switch (ctx_lower(*p)) {
        case 'a':
            if (ctx_starts_ci(p, left, "avg bus bandwidth", 17)) return 1;
            break;
        case 's':
            if (ctx_starts_ci(p, left, "specdecod", 9) || ctx_starts_ci(p, left, "set by environment", 18)) return 1;
            break;
        case 'n':
        case 'r':
            if (ctx_starts_ci(p + 1, left - 1, "ccl version", 11)) return 1;
            break;
        default:
            break;
        }
    }
    return 0;
}

/* After an `NCCL INFO|WARN|TRACE`, _SKIP's look-ahead words: set by environment, NCCL_[A-Z0-9_]+ set to,
 * [NR]CCL version (cased). */
static int ctx_echo_words(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        const char *p = s + i;
        Py_ssize_t left = n - i;
        if (p[0] == 's' && starts_len(p, left, "set by environment", 18)) return 1;
        if ((p[0] == 'N' || p[0] == 'R') && starts_len(p + 1, left - 1, "CCL version", 11)) return 1;
        if (p[0] == 'N' && starts_len(p, left, "NCCL_", 5)) {
            Py_ssize_t j = ctx_name_end(p, left, 5);
            if (j > 5 && starts_len(p + j, left - j, " set to", 7)) return 1;
        }
    }
    return 0;
}

/* context._skipped(line): `Decode batch|Prefill batch|^-{3,}[\w ]+-{3,}\s*$|NCCL (?:INFO|WARN|TRACE)(?!.*(?:...))`.
 * The look-ahead reads the rest of the line: it fails after an earlier level word whenever it fails
 * after the last one, so the last one decides. */
static int context_skipped(const char *s, Py_ssize_t n) {
    if (find(s, n, "Decode batch", 12) || find(s, n, "Prefill batch", 13)) return 1;
    if (starts_len(s, n, "---", 3)) {  /* each run is maximal: a shorter one leaves a character no next piece takes */
        Py_ssize_t i = 0, j;
        while (i < n && s[i] == '-') i++;
        j = i;
        while (j < n && (is_word(s[j]) || s[j] == ' ')) j++;
        if (j > i) {
            Py_ssize_t k = j;
            while (k < n && s[k] == '-') k++;
            if (k - j >= 3) {
                while (k < n && is_space(s[k])) k++;
                if (k == n) return 1;
            }
        }
    }
    Py_ssize_t after = -1;
    for (const char *p = s; (p = find(p, n - (p - s), "NCCL ", 5)); p++) {
        Py_ssize_t at = p - s + 5, left = n - at;
        if (starts_len(s + at, left, "INFO", 4) || starts_len(s + at, left, "WARN", 4)) after = at + 4;
        else if (starts_len(s + at, left, "TRACE", 5)) after = at + 5;
    }
    return after >= 0 && !ctx_echo_words(s + after, n - after);
}

static void context_clear(context_fast *c) {
    Py_CLEAR(c->watcher);
    Py_CLEAR(c->candidates);
    Py_CLEAR(c->dump_lines);
    c->fetched = 0;
}

/* The Watcher's sets for this scan call: 1, or 0 when they are not sets (offer() is called then). */
static int context_fetch(context_fast *c) {
    c->fetched = -1;
    if (!c->watcher) return 0;
    Py_XSETREF(c->candidates, PyObject_GetAttrString(c->watcher, "candidates"));
    Py_XSETREF(c->dump_lines, PyObject_GetAttrString(c->watcher, "dump_lines"));
    if (!c->candidates || !c->dump_lines || !PySet_CheckExact(c->candidates) || !PySet_CheckExact(c->dump_lines)) {
        PyErr_Clear();
        return 0;
    }
    c->fetched = 1;
    return 1;
}

/* offer(lineno, line) for an ASCII line the scanner reads, `wanted` whether a format reader's
 * trigger or start is on it (its mask, the Tagger's bits aside): done here where the Watcher is
 * bound, else `offer` (result.offer, or None) is called. 0, or -1 on error. */
static int context_offer(context_fast *c, PyObject *offer, const char *s, Py_ssize_t n, PyObject *line,
                         int64_t lineno, int wanted) {
    if (offer == Py_None || !context_words(s, n)) return 0;  /* (no WORDS: offer() returns at once) */
    if (c->fetched == 0) context_fetch(c);
    if (c->fetched < 0) {
        PyObject *text = line ? (Py_INCREF(line), line) : PyUnicode_DecodeASCII(s, n, NULL);
        PyObject *at = text ? PyLong_FromLongLong((long long)lineno) : NULL, *r = NULL;
        if (at) r = PyObject_CallFunctionObjArgs(offer, at, text, NULL);
        Py_XDECREF(text); Py_XDECREF(at);
        if (!r) return -1;
        Py_DECREF(r);
        return 0;
    }
    if (!wanted || context_skipped(s, n)) return 0;
    PyObject *at = PyLong_FromLongLong((long long)lineno);
    if (!at) return -1;
    int status = 0, held = PySet_Contains(c->candidates, at), dumped = held ? 0 : PySet_Contains(c->dump_lines, at);
    if (held < 0 || dumped < 0) status = -1;
    else if (!held && !dumped) {
        if (PySet_GET_SIZE(c->candidates) < c->max) status = PySet_Add(c->candidates, at);
        else status = PyObject_SetAttrString(c->watcher, "truncated", Py_True);
    }
    Py_DECREF(at);
    return status < 0 ? -1 : 0;
}

/* offer_words(line) -> (WORDS.search(line) found, _skipped(line)) as read here, for an ASCII line
 * (tests hold them to context.py's own regexes). */
static PyObject *context_offer_words(PyObject *Py_UNUSED(mod), PyObject *line) {
    if (!PyUnicode_Check(line) || !PyUnicode_IS_ASCII(line)) {
        PyErr_SetString(PyExc_ValueError, "offer_words reads an ASCII str");
        return NULL;
    }
    const char *s = (const char *)PyUnicode_1BYTE_DATA(line);
    Py_ssize_t n = PyUnicode_GET_LENGTH(line);
    return Py_BuildValue("(NN)", PyBool_FromLong(context_words(s, n)), PyBool_FromLong(context_skipped(s, n)));
}
