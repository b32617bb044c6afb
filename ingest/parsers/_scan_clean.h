/* text.clean() of an ASCII line in C, for the dirty lines of a text chunk the scanner reads (scan_cleaned).
 *
 * A vLLM log relayed by a serving container keeps its colours as text (`^[[1;36m(VllmWorkerProcess
 * pid=176029)^[[0;0m ERROR ...^M`, DJL's `[INFO ] PyProcess - W-210-model-stdout: #033[1;36m...`): every such
 * line was handed to Python's clean(), whose _ANSI.sub tries its pattern at every character, a tenth of the
 * scan of a vLLM log. Here, on the line's bytes, clean()'s steps in its order:
 *   - `\r` and `^M` (a tqdm bar's rewrites): `^M` made `\r`, trailing ones cut, the text after the last kept;
 *   - _ANSI.sub: `(?:\x1b|\^\[|#033)\[[0-9;?]*[A-Za-z]` (U+FFFD is no ASCII) or `\[\d+(?:;\d+)*m(?!\])`, tried
 *     at each place left to right, a match dropped and the search going on after it (neither branch can
 *     backtrack into another match: what each repetition stops at is what the next part must not be);
 *   - _DJL.sub at the line's start: `\[?[A-Z]+ *\] PyProcess - W-[\w-]+?-std(?:out|err): ` (the lazy name
 *     ends at the first `-stdout: ` or `-stderr: ` its characters reach).
 * What this does not do is declined (clean_ascii gives 0: the caller calls clean()): a line that is not
 * ASCII unless clean() would leave it as it is (clean_keeps), one _WRAPPER's MPI tag or markdown quote would
 * change (`[`-led with `>:` in its first 24 characters, or `>`-led after the steps above), one _RAY_REPEAT
 * may cut (`cluster]` in it) and one that may be an MpiLine (the raw line led by `[`, digits and `,`).
 * tests/test_parsers_text.py holds it equal to clean()
 * on real dirty lines and generated ones. */

static inline int clean_digit(char c) { return c >= '0' && c <= '9'; }
static inline int clean_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static inline int clean_word(char c) { return clean_alpha(c) || clean_digit(c) || c == '_'; }

/* _ANSI's length at s[i:n] (a match is never empty), 0 when none starts there. */
static Py_ssize_t clean_ansi_at(const char *s, Py_ssize_t n, Py_ssize_t i) {
    Py_ssize_t p = -1;
    if (s[i] == 0x1b) p = i + 1;
    else if (s[i] == '^' && i + 1 < n && s[i + 1] == '[') p = i + 2;
    else if (s[i] == '#' && n - i >= 4 && memcmp(s + i, "#033", 4) == 0) p = i + 4;
    if (p >= 0 && p < n && s[p] == '[') {  /* the escape's branch */
        Py_ssize_t q = p + 1;
        while (q < n && (clean_digit(s[q]) || s[q] == ';' || s[q] == '?')) q++;
        if (q < n && clean_alpha(s[q])) return q + 1 - i;
    }
    if (s[i] != '[') return 0;  /* the colour code left without its escape */
    Py_ssize_t q = i + 1;
    if (q >= n || !clean_digit(s[q])) return 0;
    while (q < n && clean_digit(s[q])) q++;
    while (q + 1 < n && s[q] == ';' && clean_digit(s[q + 1])) {
        q++;
        while (q < n && clean_digit(s[q])) q++;
    }
    if (q >= n || s[q] != 'm' || (q + 1 < n && s[q + 1] == ']')) return 0;
    return q + 1 - i;
}

/* _DJL's length at the start of s[0:n], 0 when it does not match there. */
static Py_ssize_t clean_djl(const char *s, Py_ssize_t n) {
    Py_ssize_t i = n && s[0] == '[' ? 1 : 0, a = i;
    while (i < n && s[i] >= 'A' && s[i] <= 'Z') i++;
    if (i == a) return 0;
    while (i < n && s[i] == ' ') i++;
    static const char mid[] = "] PyProcess - W-";
    Py_ssize_t m = (Py_ssize_t)sizeof(mid) - 1;
    if (n - i < m || memcmp(s + i, mid, (size_t)m) != 0) return 0;
    i += m;
    for (Py_ssize_t e = i + 1; e <= n && (clean_word(s[e - 1]) || s[e - 1] == '-'); e++)
        if (n - e >= 9 && (memcmp(s + e, "-stdout: ", 9) == 0 || memcmp(s + e, "-stderr: ", 9) == 0)) return e + 9;
    return 0;
}

/* clean(raw) of an ASCII raw[0:n] into out (room for n bytes): 1 with *len, 0 declined (module comment). */
static int clean_ascii(const char *raw, Py_ssize_t n, char *out, Py_ssize_t *len) {
    if (n && raw[0] == '[') {  /* `[digits,` may be _MPI_TAG's: an MpiLine */
        Py_ssize_t i = 1;
        while (i < n && clean_digit(raw[i])) i++;
        if (i > 1 && i < n && raw[i] == ',') return 0;
    }
    const char *s = raw;
    Py_ssize_t a = 0, e = n;
    if (memchr(raw, '\r', (size_t)n) || find(raw, n, "^M", 2)) {  /* `^M` made `\r` in out, then cut */
        Py_ssize_t k = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (raw[i] == '^' && i + 1 < n && raw[i + 1] == 'M') out[k++] = '\r', i++;
            else out[k++] = raw[i];
        }
        while (k > 0 && out[k - 1] == '\r') k--;
        const char *r = k ? memrchr(out, '\r', (size_t)k) : NULL;
        a = r ? r - out + 1 : 0, e = k;
        s = out;
    }
    /* _ANSI.sub, into out (the write never passes the read: s may be out) */
    Py_ssize_t k = 0;
    if (memchr(s + a, '[', (size_t)(e - a))) {
        for (Py_ssize_t i = a; i < e;) {
            Py_ssize_t m = clean_ansi_at(s + a, e - a, i - a);
            if (m) i += m;
            else out[k++] = s[i++];
        }
        if (k && out[0] == '[' && find(out, k < 24 ? k : 24, ">:", 2)) return 0;  /* _WRAPPER's */
        if (find(out, k, "cluster]", 8)) return 0;  /* _RAY_REPEAT's */
    } else {
        memmove(out, s + a, (size_t)(e - a));
        k = e - a;
    }
    if (k && out[0] == '>') return 0;  /* a markdown quote: _WRAPPER's */
    if (find(out, k, "PyProcess", 9)) {
        Py_ssize_t m = clean_djl(out, k);
        memmove(out, out + m, (size_t)(k - m));
        k -= m;
    }
    *len = k;
    return 1;
}

/* Whether clean() leaves a line of any characters as it is (a client's progress bar copied with its block,
 * `# 100%|█████| 32/32 [02:30<00:00, 4.71s/it]`): nothing any of its steps starts at is in it (a `\r`, `^M`,
 * an escape's start or U+FFFD, `[`, digits and `;` up to an `m`, `PyProcess`, `cluster]`), and it leads with
 * neither `>` nor `[` (a wrapper, an MPI tag). */
static int clean_keeps(PyObject *line) {
    int kind = PyUnicode_KIND(line);
    const void *data = PyUnicode_DATA(line);
    Py_ssize_t n = PyUnicode_GET_LENGTH(line);
    if (n && (PyUnicode_READ(kind, data, 0) == '>' || PyUnicode_READ(kind, data, 0) == '[')) return 0;
    static const char py[] = "PyProcess", cl[] = "cluster]";
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i), d = i + 1 < n ? PyUnicode_READ(kind, data, i + 1) : 0;
        if (c == '\r' || c == 0x1b || c == 0xfffd || (c == '^' && (d == 'M' || d == '[')) || (c == '#' && d == '0'))
            return 0;
        if (c == '[' && d >= '0' && d <= '9') {  /* _ANSI's `\[\d+(?:;\d+)*m(?!\])` */
            Py_ssize_t q = i + 1;
            Py_UCS4 e;
            while (q < n && ((e = PyUnicode_READ(kind, data, q)) == ';' || (e >= '0' && e <= '9'))) q++;
            if (q < n && PyUnicode_READ(kind, data, q) == 'm') return 0;  /* (a `;` too many, `]` after: clean()'s) */
        }
        const char *w = c == 'P' ? py : c == 'c' ? cl : NULL;
        Py_ssize_t k = 0;
        while (w && w[k] && i + k < n && PyUnicode_READ(kind, data, i + k) == (Py_UCS4)(unsigned char)w[k]) k++;
        if (w && !w[k]) return 0;
    }
    return 1;
}

/* clean(piece) where clean_ascii takes it (a new str) or clean_keeps it, else `clean` called: a new
 * reference, or NULL. */
static PyObject *clean_line(PyObject *piece, PyObject *clean) {
    if (!PyUnicode_IS_ASCII(piece) && PyUnicode_CheckExact(piece) && clean_keeps(piece)) return Py_NewRef(piece);
    if (PyUnicode_IS_ASCII(piece)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(piece), len;
        char stack[512], *out = n <= (Py_ssize_t)sizeof(stack) ? stack : PyMem_Malloc((size_t)n + 1);
        if (!out) return PyErr_NoMemory();
        int done = clean_ascii((const char *)PyUnicode_1BYTE_DATA(piece), n, out, &len);
        PyObject *line = done ? PyUnicode_DecodeASCII(out, len, NULL) : NULL;
        if (out != stack) PyMem_Free(out);
        if (done) return line;
    }
    return PyObject_CallOneArg(clean, piece);
}

/* clean_line(line: str) -> the line as text.clean cleans it, or None where the scanner hands it to clean()
 * (the tests hold the two equal). */
static PyObject *scan_clean_line(PyObject *Py_UNUSED(module), PyObject *line) {
    if (!PyUnicode_Check(line)) {
        PyErr_SetString(PyExc_TypeError, "clean_line takes a str");
        return NULL;
    }
    if (!PyUnicode_IS_ASCII(line)) return clean_keeps(line) ? Py_NewRef(line) : Py_NewRef(Py_None);
    Py_ssize_t n = PyUnicode_GET_LENGTH(line), len;
    char *out = PyMem_Malloc((size_t)n + 1);
    if (!out) return PyErr_NoMemory();
    int done = clean_ascii((const char *)PyUnicode_1BYTE_DATA(line), n, out, &len);
    PyObject *got = done ? PyUnicode_DecodeASCII(out, len, NULL) : Py_NewRef(Py_None);
    PyMem_Free(out);
    return got;
}
