/* Serving benchmark result blocks in the native scanner (serving.BlockReader, FORMATS §2.1, §2.3).
 *
 * A `Serving Benchmark Result` block is read by two readers at once, SGLang's and vLLM's (both
 * hold a BlockReader, fed the same lines), and on a log of bench runs most lines are its rows:
 * with a block open both readers are busy() and, before this, every row went through Python
 * twice (the regex, serving_key, parse_value, a Row) plus the engine's per-line feed.
 *
 * native.py sets F_BENCH when the only readers busy are those two, each with a block open that is
 * not a copied one (no `# ` prefix), whose tool is known (note_row and note_section change nothing
 * then) and with no per-position subsection open; it hands over both blocks' rows and sections
 * lists (bench()). Here a line is read only if it is one of:
 *   - a plain row, `Label:   value` (serving._ROW) with a value parse_value() reads as an int or
 *     a float, a label serving.KEYS knows and not a `Position i` row, holding no reader's literal:
 *     the same Row joins both blocks' rows. Its STARTS may be launch_env's (a capital first: no
 *     `=` on the line, so _command finds no assignment) or the bench readers' (fed anyway);
 *   - a section title `-----Name-----` (serving._SECTION) holding no literal but `---`: its header
 *     joins both blocks' sections (the subsection is "" already);
 *   - a blank line.
 * Such a line the engines hand the context Watcher (a reader's STARTS or literal is on it) is
 * offered to it here (result.offer) when it may hold one of context.WORDS (a superset is looked
 * for; offer() itself decides). Any other line (the title or footer that closes the block, a row
 * with text, a valueless row) goes back to Python, which reads it as the line engine does.
 */

#define F_BENCH 4096  /* native.F_BENCH: both bench readers' blocks are open and handed over (bench()) */

#define BENCH_LABELS 64
#define BENCH_LABEL_MAX 64

struct vllm_state {
    PyObject *rows[2], *sections[2];  /* the two open blocks' lists (SGLang's, vLLM's) */
    PyObject *row_type;  /* serving.Row */
    PyObject *keys;  /* serving.KEYS: label -> serving_key(label) */
    PyObject *offer;  /* result.offer (context.Watcher.offer) or None */
    char prefix[4]; Py_ssize_t prefix_len, prefix_need;  /* a copied block's mark (`# `), and its rstrip() */
    int nccl_idle;  /* nccl_tests holds no rows: a `#` line that names none of its words changes nothing */
    uint64_t dash_lits;  /* the trigger literals whose text is `---`, and the scanner's own (`tok/`) */
    /* labels met before, with their str and key: they repeat block after block */
    struct { char text[BENCH_LABEL_MAX]; Py_ssize_t len; PyObject *label, *key; } seen[BENCH_LABELS];
};

static void vllm_release(Scanner *self) {
    struct vllm_state *v = self->vllm;
    if (!v) return;
    for (int i = 0; i < 2; i++) { Py_CLEAR(v->rows[i]); Py_CLEAR(v->sections[i]); }
    Py_CLEAR(v->row_type);
    Py_CLEAR(v->keys);
    Py_CLEAR(v->offer);
    for (int i = 0; i < BENCH_LABELS; i++) { Py_CLEAR(v->seen[i].label); Py_CLEAR(v->seen[i].key); }
    free(v);
    self->vllm = NULL;
}

/* bench(rows_sglang, sections_sglang, rows_vllm, sections_vllm, Row, keys) before a scan with
 * F_BENCH; bench(None) after it (the lists are let go). */
static PyObject *Scanner_bench(Scanner *self, PyObject *args) {
    if (not_ready(self)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    struct vllm_state *v = self->vllm;
    if (n == 1 && PyTuple_GET_ITEM(args, 0) == Py_None) {
        if (v) {
            for (int i = 0; i < 2; i++) { Py_CLEAR(v->rows[i]); Py_CLEAR(v->sections[i]); }
            Py_CLEAR(v->offer);
        }
        Py_RETURN_NONE;
    }
    PyObject *ra, *sa, *rb, *sb, *row_type, *keys, *offer;
    const char *prefix;
    Py_ssize_t prefix_len;
    int nccl_idle;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!Os#p", &PyList_Type, &ra, &PyList_Type, &sa, &PyList_Type, &rb,
                          &PyList_Type, &sb, &PyType_Type, &row_type, &PyDict_Type, &keys, &offer, &prefix,
                          &prefix_len, &nccl_idle)) return NULL;
    if (prefix_len >= (Py_ssize_t)sizeof(v->prefix)) {
        PyErr_SetString(PyExc_ValueError, "a block's prefix is a mark and a space at most");
        return NULL;
    }
    if (offer != Py_None && !PyCallable_Check(offer)) {
        PyErr_SetString(PyExc_TypeError, "offer must be callable or None");
        return NULL;
    }
    if (!v) {
        v = self->vllm = calloc(1, sizeof(*v));
        if (!v) return PyErr_NoMemory();
        for (int k = 0; k < self->nlit; k++)
            if ((self->lit_len[k] == 3 && memeq(self->lit[k], "---", 3)) || self->lit_reader[k] < 0)
                v->dash_lits |= 1ull << k;
    }
    if (v->keys != keys || v->row_type != row_type) {  /* labels looked up in another table: forgotten */
        for (int i = 0; i < BENCH_LABELS; i++) { Py_CLEAR(v->seen[i].label); Py_CLEAR(v->seen[i].key); v->seen[i].len = 0; }
        Py_INCREF(keys);
        Py_XSETREF(v->keys, keys);
        Py_INCREF(row_type);
        Py_XSETREF(v->row_type, row_type);
    }
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
    Py_RETURN_NONE;
}

/* serving._ROW's label characters: [A-Za-z0-9 ()/%#.,\-] */
static inline int label_char(char c) {
    return (CLASS[(unsigned char)c] & C_WORD && c != '_') || c == ' ' || c == '(' || c == ')' || c == '/' || c == '%'
        || c == '#' || c == '.' || c == ',' || c == '-';
}

static inline int is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

/* parse_value() of a row's value token t[0:len] when it gives an int or a float: *out a new
 * reference; 0 when the text is another (text, nan, an exponent, 19 digits...): Python's. */
static int bench_value(const char *t, Py_ssize_t len, PyObject **out) {
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
        long long x = 0;
        for (Py_ssize_t i = k; i < len; i++) x = x * 10 + (t[i] - '0');
        *out = PyLong_FromLongLong(t[0] == '-' ? -x : x);
        return *out ? 1 : -1;
    }
    if (len > 40) return 0;  /* float(text), finite at this length (no exponent) */
    char buf[48];
    memcpy(buf, t, (size_t)len);
    buf[len] = 0;
    double x = PyOS_string_to_double(buf, NULL, NULL);
    if (x == -1.0 && PyErr_Occurred()) return -1;
    *out = PyFloat_FromDouble(x);
    return *out ? 1 : -1;
}

/* The label's str and key (borrowed, held in `seen`), or 0 when serving.KEYS lacks it. */
static int bench_label(struct vllm_state *v, const char *s, Py_ssize_t n, PyObject **label, PyObject **key) {
    unsigned slot = fnv1a(s, n) & (BENCH_LABELS - 1);
    if (v->seen[slot].label && v->seen[slot].len == n && memeq(v->seen[slot].text, s, (size_t)n)) {
        *label = v->seen[slot].label, *key = v->seen[slot].key;
        return 1;
    }
    PyObject *u = PyUnicode_DecodeASCII(s, n, NULL);
    if (!u) return -1;
    PyObject *k = PyDict_GetItemWithError(v->keys, u);
    if (!k || !PyUnicode_CheckExact(k)) {
        Py_DECREF(u);
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_INCREF(k);
    if (n <= BENCH_LABEL_MAX) {
        Py_XSETREF(v->seen[slot].label, u);
        Py_XSETREF(v->seen[slot].key, k);
        memcpy(v->seen[slot].text, s, (size_t)n);
        v->seen[slot].len = n;
        *label = u, *key = k;
        return 1;
    }
    /* a label too long to keep: made again each time (the Row holds its own references) */
    *label = u, *key = k;
    return 2;  /* the caller releases both */
}

/* A `Label:   value` row of an open block (BlockReader._row with a value): OK or PYTHON, ERROR. */
static int bench_row(Scanner *self, const char *s, Py_ssize_t n, int64_t lineno) {
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
    /* `Position i` rows are keyed by the subsection above them: Python's */
    if (le - i >= 9 && (s[i] | 0x20) == 'p' && memeq(s + i + 1, "osition ", 8)) return PYTHON;
    Py_ssize_t j = colon + 1;
    if (j >= n || !is_space(s[j])) return PYTHON;  /* valueless, or `:` glued to text */
    while (j < n && is_space(s[j])) j++;
    Py_ssize_t v0 = j;
    while (j < n && !is_space(s[j])) j++;
    Py_ssize_t v1 = j;
    while (j < n && is_space(s[j])) j++;
    if (j < n || v1 == v0) return PYTHON;  /* two tokens (no row: the block ends) or no value */
    PyObject *value = NULL;
    int got = bench_value(s + v0, v1 - v0, &value);
    if (got <= 0) return got < 0 ? ERROR : PYTHON;
    PyObject *label, *key;
    int known = bench_label(v, s + i, le - i, &label, &key);
    if (known <= 0) {
        Py_DECREF(value);
        return known < 0 ? ERROR : PYTHON;
    }
    PyObject *ln = PyLong_FromLongLong(lineno);
    PyObject *row = NULL;
    if (ln) {
        PyObject *argv[4] = {ln, label, key, value};
        row = PyObject_Vectorcall(v->row_type, argv, 4, NULL);
    }
    Py_XDECREF(ln);
    Py_DECREF(value);
    if (known == 2) { Py_DECREF(label); Py_DECREF(key); }
    if (!row) return ERROR;
    int bad = PyList_Append(v->rows[0], row) < 0 || PyList_Append(v->rows[1], row) < 0;
    Py_DECREF(row);
    return bad ? ERROR : OK;
}

/* A section title, serving._SECTION: `^\s*-{3,}\s*([A-Za-z][^-]*(?:-[A-Za-z][^-]*)*?)\s*-{3,}\s*$`
 * (BlockReader._section; note_section does nothing with the tool known, the subsection is ""). */
static int bench_section(Scanner *self, const char *s, Py_ssize_t n) {
    struct vllm_state *v = self->vllm;
    Py_ssize_t a = 0, e = n;
    while (a < n && is_space(s[a])) a++;
    Py_ssize_t d = a;
    while (d < n && s[d] == '-') d++;
    if (d - a < 3) return PYTHON;
    while (d < n && is_space(s[d])) d++;
    if (d >= n || !is_alpha(s[d])) return PYTHON;
    while (e > d && is_space(s[e - 1])) e--;
    Py_ssize_t t = e;
    while (t > d && s[t - 1] == '-') t--;
    if (e - t < 3) return PYTHON;
    Py_ssize_t h1 = t;
    while (h1 > d && is_space(s[h1 - 1])) h1--;
    for (Py_ssize_t k = d; k < h1; k++)  /* a `-` in the header is followed by a letter */
        if (s[k] == '-' && (k + 1 >= h1 || !is_alpha(s[k + 1]))) return PYTHON;
    PyObject *header = PyUnicode_DecodeASCII(s + d, h1 - d, NULL);
    if (!header) return ERROR;
    int bad = PyList_Append(v->sections[0], header) < 0 || PyList_Append(v->sections[1], header) < 0;
    Py_DECREF(header);
    return bad ? ERROR : OK;
}

/* Whether the line may hold one of context.WORDS: a case-blind search for a word of each. */
static int maybe_words(const char *s, Py_ssize_t n) {
    static const char *words[] = {"throughput", "accept", "bandwidth", "specdecod", "statistics", "speculative",
                                  "environment", "cl version", "nccl_"};
    static const Py_ssize_t lens[] = {10, 6, 9, 9, 10, 11, 11, 10, 5};
    for (Py_ssize_t i = 0; i < n; i++) {
        char c = s[i] | 0x20;
        for (size_t w = 0; w < sizeof(words) / sizeof(*words); w++) {
            Py_ssize_t k = lens[w];
            if (c != words[w][0] || i + k > n) continue;
            Py_ssize_t j = 1;
            while (j < k && (s[i + j] | 0x20) == words[w][j]) j++;
            if (j == k) return 1;
        }
    }
    return 0;
}

/* result.offer(lineno, line) where it may do something (maybe_words): 0, or -1 on error. */
static int bench_offer(struct vllm_state *v, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno) {
    if (v->offer == Py_None || !maybe_words(s, n)) return 0;
    PyObject *text = line ? (Py_INCREF(line), line) : PyUnicode_DecodeASCII(s, n, NULL);
    PyObject *ln = text ? PyLong_FromLongLong(lineno) : NULL;
    PyObject *got = NULL;
    if (ln) {
        PyObject *argv[2] = {ln, text};
        got = PyObject_Vectorcall(v->offer, argv, 2, NULL);
    }
    Py_XDECREF(ln);
    Py_XDECREF(text);
    Py_XDECREF(got);
    return got ? 0 : -1;
}

/* Whether a `#` line may hold a word nccl_tests._comment acts on (a superset of its tests). */
static int nccl_words(const char *s, Py_ssize_t n) {
    return find(s, n, "busbw", 5) || find(s, n, "bandwidth", 9) || find(s, n, "Out of", 6)
        || find(s, n, "Collective", 10) || find(s, n, "nThread", 7) || find(s, n, "nccl-tests", 10)
        || find(s, n, "Rank", 4);
}

/* A line while both bench blocks are open (F_BENCH): what the Tagger, both BlockReaders,
 * launch_env, nccl_tests and the Watcher would do with it, or PYTHON. */
static int bench_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, Eagle *e, int flags,
                      int64_t lineno, unsigned *mask, uint64_t lits, unsigned by_literal) {
    struct vllm_state *v = self->vllm;
    unsigned by_start = starts_of(s, n);
    *mask = by_literal | by_start;
    if (!v || !v->rows[0] || !v->rows[1] || e->in_block) return PYTHON;
    /* Readers fed besides the two busy ones: none by a literal (the bench readers' `---` aside) */
    if (by_literal & ~(BIT(R_SGLANG) | BIT(R_VLLM)) || (lits & ~v->dash_lits)) return PYTHON;
    if (by_start & ~(BIT(R_TAGGER) | BIT(R_NCCL_TESTS) | BIT(R_LAUNCH_ENV) | BIT(R_SGLANG) | BIT(R_VLLM)))
        return PYTHON;
    int blank = blank_line(s, n);
    int label;
    if (n && s[0] == '[') return PYTHON;  /* a label the Tagger may know: read_line's */
    int tag = tagger_tag(self, s, n, NULL, &label);  /* no labels read past a `[` */
    if (tag != TAG_MAIN) return tag < 0 ? ERROR : PYTHON;
    if (!blank && !(flags & F_MAIN)) return PYTHON;  /* the Tagger makes "main" of it */
    /* launch_env: an assignment needs a `=` */
    if (by_start & BIT(R_LAUNCH_ENV) && memchr(s, '=', (size_t)n)) return PYTHON;
    if (by_start & BIT(R_NCCL_TESTS)) {  /* only a `#` comment that names none of _comment's words */
        Py_ssize_t i = 0;
        while (i < n && is_blank(s[i])) i++;
        if (!v->nccl_idle || i >= n || s[i] != '#' || nccl_words(s, n)) return PYTHON;
    }
    const char *b = s;
    Py_ssize_t bn = n;
    if (v->prefix_len) {  /* BlockReader.feed: a copied block's lines carry its mark */
        if (n < v->prefix_need || !memeq(s, v->prefix, (size_t)v->prefix_need)) return PYTHON;
        Py_ssize_t k = v->prefix_len < n ? v->prefix_len : n;
        b = s + k, bn = n - k;
    }
    int r;
    if (blank_line(b, bn))
        r = OK;
    else if ((r = bench_row(self, b, bn, lineno)) == PYTHON && by_literal)
        r = bench_section(self, b, bn);
    if (r != OK) return r;
    /* offered after the readers, as the engines do */
    if (*mask && bench_offer(v, s, n, line, lineno) < 0) return ERROR;
    return OK;
}
