/* NCCL lines that are not a head's INFO lines, read in C (#included by _scan.c after _scan_nccl.h,
 * whose state and helpers they use): the lines an nccl-tests output prints between its runs.
 *
 *   v100-gpu-1:14926:14926 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]
 *   NCCL version 2.9.6+cuda11.2
 *
 * A WARN line is read where nothing it would do is left to do: the Tagger knows its process as
 * _tag would make it (pid, host, a rank or no rank in the message: nccl_head_flags' NP_TAG) and
 * keeps the line (nccl_keep, as _tag does while it holds fewer than REPEATS), and nccl_debug
 * warned its text already (Parser.warned: _warn adds nothing). The bare version line (rank 0 and
 * nccl-tests print it, 2.12 .. 2.25) once the settings it sets are held: nccl_debug._version marks
 * it used and the context watcher is offered it, as with an INFO one (nccl_info). Any other shape
 * (a version behind a process tag, a line naming launch_env's `NCCL_`, a context word) is Python's. */

/* `host:pid:tid [dev] [file.cc:N ]NCCL WARN msg` from the line's start, as _LINE and the Tagger's
 * _NCCL match it there: the head in *h (its msg: the message's start), the place `file.cc:N` in
 * *where_at..*where_end (equal: none). 0 when the line is not so. */
static int nccl_warn_head(const char *s, Py_ssize_t n, nccl_line_head *h, Py_ssize_t *where_at, Py_ssize_t *where_end) {
    Py_ssize_t i = nccl_head_start(s, n, h);
    if (!i) return 0;
    /* `(?:(\S+:\d+) )?`: the next token whole, where it ends in `:` and digits (a name before) */
    *where_at = *where_end = i;
    Py_ssize_t t = i;
    while (t < n && !is_space(s[t])) t++;
    Py_ssize_t d = t;
    while (d > i && is_digit(s[d - 1])) d--;
    if (t < n && s[t] == ' ' && d < t && d - 1 > i && s[d - 1] == ':') *where_end = t, i = t + 1;
    /* `NCCL WARN\b ?`: the token is not NCCL's, or it is and the group matched nothing */
    if (!starts_len(s + i, n - i, "NCCL WARN", 9) || (i + 9 < n && is_word(s[i + 9]))) return 0;
    i += 9;
    if (i < n && s[i] == ' ') i++;
    h->msg = i;
    return 1;
}

/* A WARN line (see the top): OK where nothing is left to do, PYTHON, or ERROR. */
static int nccl_warn_line(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, unsigned rd,
                          PyObject *nccl_lines, PyObject *channel_lines) {
    struct nccl_fast *f = self->nccl;
    nccl_line_head h;
    Py_ssize_t wa, we;
    /* no other reader's (launch_env's `NCCL_`, a digit-led host's nccl_tests) */
    if (!f || f->fetched < 0 || rd & ~(BIT(R_TAGGER) | BIT(R_NCCL_DEBUG)) || !nccl_warn_head(s, n, &h, &wa, &we))
        return PYTHON;
    const char *m = s + h.msg;
    Py_ssize_t mn = n - h.msg;
    if (f->fetched == 0 && !nccl_fetch(f)) return PYTHON;
    unsigned fl;
    PyObject *tag;
    int status = nccl_head_flags(f, s, &h, nccl_head_ahead(f, s, &h), &fl, &tag);
    if (status != OK) return status;
    /* _tag: the process as it would be made (or made here); a rank its message names is set where it has none */
    if (!(fl & (NP_TAG | NP_NEW)) || (!(fl & NP_RANK) && find(m, mn, "rank ", 5))) return PYTHON;
    /* _warn's text, f"NCCL WARN {msg.strip()}" + f" ({where})", warned already */
    while (mn && is_space(m[0])) m++, mn--;
    while (mn && is_space(m[mn - 1])) mn--;
    Py_ssize_t wn = we - wa, len = 10 + mn + (wn ? wn + 3 : 0);
    PyObject *text = PyUnicode_New(len, 127);
    if (!text) return ERROR;
    char *out = (char *)PyUnicode_1BYTE_DATA(text);
    memcpy(out, "NCCL WARN ", 10);
    memcpy(out + 10, m, (size_t)mn);
    if (wn) {
        memcpy(out + 10 + mn, " (", 2);
        memcpy(out + 12 + mn, s + wa, (size_t)wn);
        out[len - 1] = ')';
    }
    PyObject *warned = PyObject_GetAttrString(f->parser, "warned");
    int known = warned && PySet_Check(warned) ? PySet_Contains(warned, text) : warned ? 0 : -1;
    Py_XDECREF(warned);
    Py_DECREF(text);
    if (known <= 0) return known < 0 ? ERROR : PYTHON;
    if (fl & NP_NEW) {  /* the process's first line: _tag makes it */
        if ((status = nccl_new_process(f, s, n, &h, line, tag, nccl_lines, lineno)) != OK) return status;
        f->heads[f->last_head].flags = (fl & ~NP_NEW) | NP_TAG;
    }
    status = nccl_keep(f, s, n, NULL, line, tag, nccl_lines, channel_lines, 0, 0);  /* _tag keeps the line */
    /* then offer(): a context word (`environment is not MSCCL compatible`) in a WARN line _SKIP skips */
    if (status == OK && context_offer(f->ctx, f->offer, s, n, line, lineno, 1) < 0) return ERROR;
    return status;
}

/* The bare `NCCL version 2.9.6+cuda11.2` (see the top): OK, PYTHON, or ERROR. */
static int nccl_bare_version(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, unsigned rd,
                             unsigned by_literal, uint64_t lits, int flags) {
    struct nccl_fast *f = self->nccl;
    /* _BARE_VERSION with no process tag. launch_env (its STARTS: a capital, "cl version") reads a
     * command there: "NCCL" then a space is no `NAME=` (_START), and no prompt. No " NCCL ": the
     * Tagger's and _LINE's searches find no head; the Tagger tags it "main" unless another of its
     * literals is there (`NCCL version 2.12.7 pid=3 environ` is an env dump's process to _tag). */
    if (!f || f->fetched < 0 || !(flags & F_MAIN) || rd & ~(BIT(R_TAGGER) | BIT(R_NCCL_DEBUG) | BIT(R_LAUNCH_ENV))
        || !tagger_nccl_only(self, lits)
        || by_literal & BIT(R_LAUNCH_ENV) || n < 14 || !starts_len(s, n, "NCCL version ", 13) || !is_digit(s[13])
        || find(s, n, " NCCL ", 6))
        return PYTHON;
    if (f->fetched == 0 && !nccl_fetch(f)) return PYTHON;
    if (!nccl_version_held(f, s, n)) return PYTHON;
    /* _version: the format and settings are held */
    return nccl_version_read(f, s, n, line, lineno) < 0 ? ERROR : OK;
}

/* `node [0] NCCL INFO RCCL version : 2.27.7-HEAD:29e1567`: an RCCL line whose `host:pid:tid` was
 * redacted to one word. Neither _LINE nor the Tagger's _NCCL finds a head in it when its one '['
 * follows a word with no ':' (both need `host:pid:tid [dev] `), so the Tagger tags it "main" and
 * nccl_debug.feed reads it by its words ("RCCL version" and " NCCL INFO "): _rccl_version of the
 * line, as nccl_rccl_version reads it (the version held). No other reader's (rd), "main" made
 * (F_MAIN), no other Tagger literal, no env dump's `environ`: OK, PYTHON, or ERROR. */
static int nccl_headless_rccl(Scanner *self, const char *s, Py_ssize_t n, PyObject *line, int64_t lineno, unsigned rd,
                              uint64_t lits, int flags) {
    struct nccl_fast *f = self->nccl;
    if (!f || f->fetched < 0 || !(flags & F_MAIN) || rd & ~(BIT(R_TAGGER) | BIT(R_NCCL_DEBUG)) || n == 0
        || !tagger_nccl_only(self, lits)  /* _tag's launch line (`server_args=ServerArgs(`) or env dump */
        || s[0] == '(' || s[0] == '[' || s[0] == '#' || s[0] == '$' || s[0] == '+')
        return PYTHON;
    Py_ssize_t i = 0;
    while (i < n && !is_space(s[i]) && s[i] != ':' && s[i] != '[') i++;
    if (i == 0 || !starts_len(s + i, n - i, " [", 2)) return PYTHON;
    Py_ssize_t j = nccl_digits(s, n, i + 2);
    if (j == i + 2 || !starts_len(s + j, n - j, "] NCCL INFO ", 12)) return PYTHON;
    const char *m = s + j + 12;
    Py_ssize_t mn = n - j - 12;
    if (memchr(m, '[', (size_t)mn) || find(s, n, "environ", 7) || !nccl_rccl_shape(m, mn)) return PYTHON;
    if (f->fetched == 0 && !nccl_fetch(f)) return PYTHON;
    return nccl_rccl_version(f, s, n, line, lineno, m, mn);
}
