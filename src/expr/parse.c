/*
** parse.c — recursive-descent parser for the predicate grammar documented in
** include/dk/expr.h (a Spark-SQL-like subset: comparisons, IS [NOT] NULL, [NOT] IN,
** [NOT] LIKE 'prefix%', [NOT] BETWEEN, STARTS_WITH, ISNAN, AND/OR/NOT, typed literals).
**
** Errors carry the byte offset of the offending token. Recursion is bounded by
** DK_EXPR_MAX_DEPTH, so hostile input cannot exhaust the stack. Every node and every scratch
** block goes through the caller's allocator (dk_expr_parse_options.alloc); composite nodes get
** it from their first child (expr.c).
*/
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>

#include "expr/expr_int.h"

typedef enum tok_kind {
  T_EOF = 0,
  T_IDENT,   /* plain identifier or keyword */
  T_QIDENT,  /* `quoted` identifier */
  T_STRING,  /* '...' */
  T_HEX,     /* X'...' */
  T_NUMBER,
  T_LPAREN,
  T_RPAREN,
  T_COMMA,
  T_DOT,
  T_OP       /* comparison operator; op field */
} tok_kind;

typedef struct tok {
  tok_kind kind;
  size_t start, end;  /* [start, end) in the source */
  dk_cmp_op op;
} tok;

typedef struct parser {
  const char *s;
  size_t n;
  tok cur;
  int depth;
  const dk_allocator *alloc; /* of every node and of the parser's scratch (NULL: libc) */
  dk_error *err;
} parser;

static bool is_ident_start(char c) {
  return c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z');
}
static bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static dk_status lex_error(parser *p, size_t at, const char *what) {
  return dk__error_set(p->err, DK_INVALID, "syntax error at offset %zu: %s", at, what);
}

/* Lexes the token starting at or after `pos`. */
static dk_status lex(parser *p, size_t pos, tok *t) {
  const char *s = p->s;
  size_t n = p->n;
  while (pos < n && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
    pos++;
  memset(t, 0, sizeof *t);
  t->start = pos;
  if (pos >= n) {
    t->kind = T_EOF;
    t->end = pos;
    return DK_OK;
  }
  char c = s[pos];
  if ((c == 'X' || c == 'x') && pos + 1 < n && s[pos + 1] == '\'') {
    size_t i = pos + 2;
    while (i < n && s[i] != '\'') i++;
    if (i >= n) return lex_error(p, pos, "unterminated binary literal");
    t->kind = T_HEX;
    t->end = i + 1;
    return DK_OK;
  }
  if (is_ident_start(c)) {
    size_t i = pos;
    while (i < n && is_ident_char(s[i])) i++;
    t->kind = T_IDENT;
    t->end = i;
    return DK_OK;
  }
  if (c == '`' || c == '\'') {
    size_t i = pos + 1;
    for (;;) {
      if (i >= n)
        return lex_error(p, pos, c == '`' ? "unterminated `identifier`" : "unterminated string");
      if (s[i] == c) {
        if (i + 1 < n && s[i + 1] == c) {
          i += 2;
          continue;
        }
        break;
      }
      i++;
    }
    t->kind = c == '`' ? T_QIDENT : T_STRING;
    t->end = i + 1;
    return DK_OK;
  }
  if (is_digit(c) || ((c == '-' || c == '.') && pos + 1 < n &&
                      (is_digit(s[pos + 1]) ||
                       (c == '-' && s[pos + 1] == '.' && pos + 2 < n && is_digit(s[pos + 2]))))) {
    size_t i = pos;
    if (s[i] == '-') i++;
    while (i < n && is_digit(s[i])) i++;
    if (i < n && s[i] == '.') {
      i++;
      while (i < n && is_digit(s[i])) i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
      size_t j = i + 1;
      if (j < n && (s[j] == '+' || s[j] == '-')) j++;
      if (j >= n || !is_digit(s[j])) return lex_error(p, pos, "malformed number exponent");
      while (j < n && is_digit(s[j])) j++;
      i = j;
    }
    if (i < n && (is_ident_char(s[i]) || s[i] == '.'))
      return lex_error(p, pos, "malformed number");
    t->kind = T_NUMBER;
    t->end = i;
    return DK_OK;
  }
  t->end = pos + 1;
  switch (c) {
    case '(': t->kind = T_LPAREN; return DK_OK;
    case ')': t->kind = T_RPAREN; return DK_OK;
    case ',': t->kind = T_COMMA; return DK_OK;
    case '.': t->kind = T_DOT; return DK_OK;
    case '=':
      t->kind = T_OP;
      t->op = DK_CMP_EQ;
      if (pos + 1 < n && s[pos + 1] == '=') t->end++;
      return DK_OK;
    case '!':
      if (pos + 1 < n && s[pos + 1] == '=') {
        t->kind = T_OP;
        t->op = DK_CMP_NE;
        t->end++;
        return DK_OK;
      }
      break;
    case '<':
      t->kind = T_OP;
      t->op = DK_CMP_LT;
      if (pos + 2 < n && s[pos + 1] == '=' && s[pos + 2] == '>') {
        t->op = DK_CMP_NULL_SAFE_EQ;
        t->end += 2;
      } else if (pos + 1 < n && s[pos + 1] == '=') {
        t->op = DK_CMP_LE;
        t->end++;
      } else if (pos + 1 < n && s[pos + 1] == '>') {
        t->op = DK_CMP_NE;
        t->end++;
      }
      return DK_OK;
    case '>':
      t->kind = T_OP;
      t->op = DK_CMP_GT;
      if (pos + 1 < n && s[pos + 1] == '=') {
        t->op = DK_CMP_GE;
        t->end++;
      }
      return DK_OK;
    default:
      break;
  }
  return lex_error(p, pos, "unexpected character");
}

static dk_status advance(parser *p) { return lex(p, p->cur.end, &p->cur); }

static dk_status peek(parser *p, tok *t) { return lex(p, p->cur.end, t); }

static bool is_kw(const parser *p, const tok *t, const char *kw) {
  size_t n = strlen(kw);
  return t->kind == T_IDENT && t->end - t->start == n && !strncasecmp(p->s + t->start, kw, n);
}

static dk_status expect(parser *p, tok_kind k, const char *what) {
  if (p->cur.kind != k) {
    char msg[96];
    snprintf(msg, sizeof msg, "expected %s", what);
    return lex_error(p, p->cur.start, msg);
  }
  return advance(p);
}

/* Unescapes a quoted token ('..' or `..`) into a fresh NUL-terminated string. */
static dk_status unquote(parser *p, const tok *t, char **out, size_t *len) {
  char q = p->s[t->start];
  size_t cap = t->end - t->start;
  char *r = dk__malloc(p->alloc, cap + 1);
  if (!r) return dk__error_set(p->err, DK_NOMEM, "out of memory (parser)");
  size_t k = 0;
  for (size_t i = t->start + 1; i + 1 < t->end; i++) {
    r[k++] = p->s[i];
    if (p->s[i] == q) i++; /* doubled quote */
  }
  r[k] = 0;
  *out = r;
  *len = k;
  return DK_OK;
}

static dk_status parse_or(parser *p, dk_expr **out);

static dk_status make_lit(parser *p, dk_expr **out, const dk_lit *l) {
  return dk_expr__new_literal_a(out, l, p->alloc, p->err);
}

/* Typed literal: KEYWORD 'text' (the keyword is the current token, the string follows). */
static dk_status parse_typed_literal(parser *p, dk_expr **out, const tok *kw, dk_atype t,
                                     bool ntz_only) {
  DK_RETURN_NOT_OK(advance(p)); /* keyword, now at the string */
  tok st = p->cur;
  char *txt;
  size_t len;
  DK_RETURN_NOT_OK(unquote(p, &st, &txt, &len));
  dk_lit l;
  dk_error e2;
  dk_error_init(&e2);
  dk_status s = DK_OK;
  memset(&l, 0, sizeof l);
  if (t.id == DK_AT_DATE32) {
    int32_t d;
    s = dk__parse_date(&d, txt, len, &e2);
    l.type = DK_LIT_DATE;
    l.v.i = d;
  } else if (t.id == DK_AT_TIMESTAMP) {
    bool zone;
    s = dk__parse_timestamp(&l.v.i, &zone, txt, len, &e2);
    if (!s && zone && ntz_only) s = DK_INVALID;
    l.type = ntz_only ? DK_LIT_TIMESTAMP_NTZ : DK_LIT_TIMESTAMP;
  } else {
    s = len ? dk__lit_from_text(&l, txt, len, &t, p->alloc, &e2) : DK_INVALID;
    if (!s && l.type == DK_LIT_NULL) s = DK_INVALID;
  }
  dk__free(p->alloc, txt);
  if (s) {
    dk__free(p->alloc, l.bytes);
    return dk__error_set(p->err, DK_INVALID, "invalid %.*s literal at offset %zu",
                         (int)(kw->end - kw->start), p->s + kw->start, st.start);
  }
  DK_RETURN_NOT_OK(advance(p));
  s = make_lit(p, out, &l);
  dk__free(p->alloc, l.bytes);
  return s;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = (char)(c | 32);
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

static dk_status parse_number(parser *p, dk_expr **out) {
  const char *s = p->s + p->cur.start;
  size_t n = p->cur.end - p->cur.start;
  bool has_dot = memchr(s, '.', n) != NULL;
  bool has_exp = memchr(s, 'e', n) || memchr(s, 'E', n);
  dk_lit l;
  memset(&l, 0, sizeof l);
  char tmp[512];
  if (n >= sizeof tmp) return lex_error(p, p->cur.start, "number literal too long");
  memcpy(tmp, s, n);
  tmp[n] = 0;
  if (has_exp) {
    l.type = DK_LIT_DOUBLE;
    l.v.d = strtod(tmp, NULL);
  } else {
    bool as_decimal = has_dot;
    if (!has_dot) {
      errno = 0;
      char *end;
      long long v = strtoll(tmp, &end, 10);
      if (errno == ERANGE) {
        as_decimal = true; /* like Spark: integers beyond bigint become decimals */
      } else {
        l.type = DK_LIT_INT64;
        l.v.i = v;
      }
    }
    if (as_decimal) {
      dk_error e2;
      dk_error_init(&e2);
      if (dk__parse_decimal_infer(&l.v.dec, &l.precision, &l.scale, tmp, n, &e2))
        return dk__error_set(p->err, DK_INVALID, "number at offset %zu: %s", p->cur.start,
                             e2.message);
      l.type = DK_LIT_DECIMAL;
    }
  }
  DK_RETURN_NOT_OK(advance(p));
  return make_lit(p, out, &l);
}

static dk_status parse_column(parser *p, dk_expr **out) {
  char **names = NULL;
  int depth = 0, cap = 0;
  dk_status st = DK_OK;
  for (;;) {
    if (p->cur.kind != T_IDENT && p->cur.kind != T_QIDENT) {
      st = lex_error(p, p->cur.start, "expected a column name");
      goto fail;
    }
    if (depth == cap) {
      int nc = cap ? cap * 2 : 4;
      if (nc > DK_EXPR_MAX_DEPTH) {
        st = lex_error(p, p->cur.start, "column path too deep");
        goto fail;
      }
      char **nn = dk__realloc(p->alloc, names, (size_t)nc * sizeof *nn);
      if (!nn) {
        st = dk__error_set(p->err, DK_NOMEM, "out of memory (parser)");
        goto fail;
      }
      names = nn;
      cap = nc;
    }
    if (p->cur.kind == T_IDENT) {
      names[depth] = dk__strndup(p->alloc, p->s + p->cur.start, p->cur.end - p->cur.start);
      if (!names[depth]) {
        st = dk__error_set(p->err, DK_NOMEM, "out of memory (parser)");
        goto fail;
      }
    } else {
      size_t len;
      DK_CHECK_GOTO(unquote(p, &p->cur, &names[depth], &len));
      if (len == 0 || memchr(names[depth], 0, len)) {
        dk__free(p->alloc, names[depth]);
        st = lex_error(p, p->cur.start, "empty or NUL-containing `identifier`");
        goto fail;
      }
    }
    depth++;
    DK_CHECK_GOTO(advance(p));
    if (p->cur.kind != T_DOT) break;
    DK_CHECK_GOTO(advance(p));
  }
  return dk_expr__new_column_a(out, names, depth, p->alloc, p->err);
cleanup:
fail:
  for (int i = 0; i < depth; i++) dk__free(p->alloc, names[i]);
  dk__free(p->alloc, names);
  return st;
}

/* Value of a short unsigned integer token (digits only, at most 3), else -1. */
static long tok_small_int(const parser *p, const tok *t) {
  size_t n = t->end - t->start;
  if (n == 0 || n > 3) return -1;
  long v = 0;
  for (size_t i = t->start; i < t->end; i++) {
    if (!is_digit(p->s[i])) return -1;
    v = v * 10 + (p->s[i] - '0');
  }
  return v;
}

static dk_status parse_operand(parser *p, dk_expr **out);

/* NAME( operand: skips the name and '(' (at name, p->cur) and parses the first argument. */
static dk_status parse_call_operand(parser *p, const tok *name, dk_expr **out) {
  DK_RETURN_NOT_OK(advance(p));
  DK_RETURN_NOT_OK(advance(p));
  if (++p->depth > DK_EXPR_MAX_DEPTH) return lex_error(p, name->start, "expression nests too deeply");
  DK_RETURN_NOT_OK(parse_operand(p, out));
  p->depth--;
  return DK_OK;
}

static dk_status parse_operand(parser *p, dk_expr **out) {
  *out = NULL;
  tok t = p->cur, nx;
  switch (t.kind) {
    case T_LPAREN: {
      DK_RETURN_NOT_OK(advance(p));
      DK_RETURN_NOT_OK(parse_or(p, out));
      dk_status st = expect(p, T_RPAREN, "')'");
      if (st) {
        dk_expr_free(*out);
        *out = NULL;
      }
      return st;
    }
    case T_NUMBER:
      return parse_number(p, out);
    case T_STRING: {
      char *txt;
      size_t len;
      DK_RETURN_NOT_OK(unquote(p, &t, &txt, &len));
      dk_status st = dk_expr__lit_bytes_a(out, DK_LIT_STRING, txt, len, p->alloc, p->err);
      dk__free(p->alloc, txt);
      if (!st) st = advance(p);
      if (st && *out) {
        dk_expr_free(*out);
        *out = NULL;
      }
      if (st && p->err && p->err->code == DK_INVALID && !strstr(p->err->message, "offset"))
        dk__error_prefix(p->err, "string literal at offset %zu", t.start);
      return st;
    }
    case T_HEX: {
      size_t nhex = t.end - t.start - 3;
      if (nhex % 2) return lex_error(p, t.start, "binary literal needs an even number of digits");
      unsigned char *buf = dk__malloc(p->alloc, nhex / 2 + 1);
      if (!buf) return dk__error_set(p->err, DK_NOMEM, "out of memory (parser)");
      for (size_t i = 0; i < nhex / 2; i++) {
        int hi = hexval(p->s[t.start + 2 + 2 * i]), lo = hexval(p->s[t.start + 3 + 2 * i]);
        if (hi < 0 || lo < 0) {
          dk__free(p->alloc, buf);
          return lex_error(p, t.start, "bad hex digit in binary literal");
        }
        buf[i] = (unsigned char)(hi * 16 + lo);
      }
      dk_status st = dk_expr__lit_bytes_a(out, DK_LIT_BINARY, buf, nhex / 2, p->alloc, p->err);
      dk__free(p->alloc, buf);
      if (!st) st = advance(p);
      if (st && *out) {
        dk_expr_free(*out);
        *out = NULL;
      }
      return st;
    }
    case T_QIDENT:
      return parse_column(p, out);
    case T_IDENT:
      break;
    default:
      return lex_error(p, t.start, "expected a column, literal or '('");
  }
  /* identifiers: keywords, typed literals, functions, columns */
  DK_RETURN_NOT_OK(peek(p, &nx));
  if (is_kw(p, &t, "NULL") || is_kw(p, &t, "TRUE") || is_kw(p, &t, "FALSE")) {
    dk_lit l;
    memset(&l, 0, sizeof l);
    l.type = is_kw(p, &t, "NULL") ? DK_LIT_NULL : DK_LIT_BOOL;
    l.v.b = is_kw(p, &t, "TRUE");
    DK_RETURN_NOT_OK(advance(p));
    return make_lit(p, out, &l);
  }
  if (is_kw(p, &t, "AND") || is_kw(p, &t, "OR") || is_kw(p, &t, "NOT") || is_kw(p, &t, "IS") ||
      is_kw(p, &t, "IN") || is_kw(p, &t, "LIKE") || is_kw(p, &t, "BETWEEN"))
    return lex_error(p, t.start, "unexpected keyword (quote column names with `)");
  if (nx.kind == T_STRING) {
    static const struct {
      const char *kw;
      dk_atype_id id;
    } typed[] = {{"TINYINT", DK_AT_INT8}, {"BYTE", DK_AT_INT8},     {"SMALLINT", DK_AT_INT16},
                 {"SHORT", DK_AT_INT16},  {"INT", DK_AT_INT32},     {"INTEGER", DK_AT_INT32},
                 {"BIGINT", DK_AT_INT64}, {"LONG", DK_AT_INT64},    {"FLOAT", DK_AT_FLOAT},
                 {"REAL", DK_AT_FLOAT},   {"DOUBLE", DK_AT_DOUBLE}, {"DATE", DK_AT_DATE32}};
    for (size_t i = 0; i < DK_ARRAY_LEN(typed); i++)
      if (is_kw(p, &t, typed[i].kw)) return parse_typed_literal(p, out, &t, dk__atype_make(typed[i].id), false);
    if (is_kw(p, &t, "TIMESTAMP"))
      return parse_typed_literal(p, out, &t, dk__atype_timestamp(DK_TU_MICRO, "UTC"), false);
    if (is_kw(p, &t, "TIMESTAMP_NTZ"))
      return parse_typed_literal(p, out, &t, dk__atype_timestamp(DK_TU_MICRO, NULL), true);
    return lex_error(p, t.start, "unknown typed literal");
  }
  if (nx.kind == T_LPAREN && is_kw(p, &t, "DECIMAL")) {
    /* DECIMAL(p,s) 'text' */
    long prec, scale;
    DK_RETURN_NOT_OK(advance(p));
    DK_RETURN_NOT_OK(advance(p));
    if (p->cur.kind != T_NUMBER) return lex_error(p, p->cur.start, "expected precision");
    prec = tok_small_int(p, &p->cur);
    DK_RETURN_NOT_OK(advance(p));
    DK_RETURN_NOT_OK(expect(p, T_COMMA, "','"));
    if (p->cur.kind != T_NUMBER) return lex_error(p, p->cur.start, "expected scale");
    scale = tok_small_int(p, &p->cur);
    DK_RETURN_NOT_OK(advance(p));
    if (p->cur.kind != T_RPAREN) return lex_error(p, p->cur.start, "expected ')'");
    if (prec < 1 || prec > 38 || scale < 0 || scale > prec)
      return lex_error(p, t.start, "invalid DECIMAL(precision, scale)");
    DK_RETURN_NOT_OK(peek(p, &nx));
    if (nx.kind != T_STRING) return lex_error(p, nx.start, "expected a quoted decimal");
    return parse_typed_literal(p, out, &t, dk__atype_decimal((int32_t)prec, (int32_t)scale),
                               false);
  }
  if (nx.kind == T_LPAREN && is_kw(p, &t, "ISNAN")) {
    /* isnan(x) is TRUE for NaN and FALSE otherwise, also for NULL: exactly `x <=> NaN`
    ** under dk's (Spark's) NaN = NaN rule */
    dk_expr *v = NULL;
    DK_RETURN_NOT_OK(parse_call_operand(p, &t, &v));
    dk_status st = expect(p, T_RPAREN, "')'");
    dk_expr *nan = NULL;
    dk_lit l;
    memset(&l, 0, sizeof l);
    l.type = DK_LIT_DOUBLE;
    l.v.d = NAN;
    if (!st) st = make_lit(p, &nan, &l);
    if (st) {
      dk_expr_free(v);
      return st;
    }
    return dk_expr_cmp(out, DK_CMP_NULL_SAFE_EQ, v, nan, p->err);
  }
  if (nx.kind == T_LPAREN && is_kw(p, &t, "STARTS_WITH")) {
    dk_expr *v = NULL;
    DK_RETURN_NOT_OK(parse_call_operand(p, &t, &v));
    dk_status st = expect(p, T_COMMA, "','");
    tok pt = p->cur;
    if (!st && pt.kind != T_STRING) st = lex_error(p, pt.start, "STARTS_WITH needs a string prefix");
    char *txt = NULL;
    size_t len = 0;
    if (!st) st = unquote(p, &pt, &txt, &len);
    if (!st) st = advance(p);
    if (!st) st = expect(p, T_RPAREN, "')'");
    if (st) {
      dk_expr_free(v);
      dk__free(p->alloc, txt);
      return st;
    }
    st = dk_expr_starts_with(out, v, txt, len, p->err);
    dk__free(p->alloc, txt);
    return st;
  }
  return parse_column(p, out);
}

static dk_status parse_predicate(parser *p, dk_expr **out) {
  dk_expr *a = NULL;
  DK_RETURN_NOT_OK(parse_operand(p, &a));
  dk_status st = DK_OK;
  tok t = p->cur;
  bool negate = false;
  if (t.kind == T_OP) {
    dk_expr *b = NULL;
    DK_CHECK_GOTO(advance(p));
    DK_CHECK_GOTO(parse_operand(p, &b));
    return dk_expr_cmp(out, t.op, a, b, p->err);
  }
  if (is_kw(p, &t, "IS")) {
    DK_CHECK_GOTO(advance(p));
    bool neg = false;
    if (is_kw(p, &p->cur, "NOT")) {
      neg = true;
      DK_CHECK_GOTO(advance(p));
    }
    if (!is_kw(p, &p->cur, "NULL")) {
      st = lex_error(p, p->cur.start, "expected NULL");
      goto cleanup;
    }
    DK_CHECK_GOTO(advance(p));
    return dk_expr_is_null(out, a, neg, p->err);
  }
  if (is_kw(p, &t, "NOT")) {
    tok nx;
    DK_CHECK_GOTO(peek(p, &nx));
    if (!is_kw(p, &nx, "IN") && !is_kw(p, &nx, "LIKE") && !is_kw(p, &nx, "BETWEEN")) {
      st = lex_error(p, nx.start, "expected IN, LIKE or BETWEEN after NOT");
      goto cleanup;
    }
    negate = true;
    DK_CHECK_GOTO(advance(p));
    t = p->cur;
  }
  if (is_kw(p, &t, "BETWEEN")) {
    /* a BETWEEN lo AND hi is a >= lo AND a <= hi (Spark's definition), NOT BETWEEN its
    ** negation */
    dk_expr *lo = NULL, *hi = NULL, *ge = NULL, *le = NULL, *r = NULL;
    DK_CHECK_GOTO(advance(p));
    DK_CHECK_GOTO(parse_operand(p, &lo));
    if (!is_kw(p, &p->cur, "AND")) {
      dk_expr_free(lo);
      st = lex_error(p, p->cur.start, "expected AND in BETWEEN");
      goto cleanup;
    }
    st = advance(p);
    if (!st) st = parse_operand(p, &hi);
    if (st) {
      dk_expr_free(lo);
      goto cleanup;
    }
    st = dk_expr_cmp(&ge, DK_CMP_GE, dk_expr_ref(a), lo, p->err); /* consumes one ref of a */
    if (st) {
      dk_expr_free(hi);
      goto cleanup;
    }
    st = dk_expr_cmp(&le, DK_CMP_LE, a, hi, p->err); /* consumes a and hi */
    if (st) {
      dk_expr_free(ge);
      return st;
    }
    DK_RETURN_NOT_OK(dk_expr_and(&r, ge, le, p->err));
    if (negate) return dk_expr_not(out, r, p->err);
    *out = r;
    return DK_OK;
  }
  if (is_kw(p, &t, "IN")) {
    dk_expr **items = NULL;
    size_t n = 0, cap = 0;
    DK_CHECK_GOTO(advance(p));
    st = expect(p, T_LPAREN, "'('");
    while (!st) {
      if (n == cap) {
        size_t nc = cap ? cap * 2 : 8;
        dk_expr **ni = dk__realloc(p->alloc, items, nc * sizeof *ni);
        if (!ni) {
          st = dk__error_set(p->err, DK_NOMEM, "out of memory (parser)");
          break;
        }
        items = ni;
        cap = nc;
      }
      st = parse_operand(p, &items[n]);
      if (st) break;
      n++;
      if (p->cur.kind == T_COMMA) {
        st = advance(p);
        continue;
      }
      st = expect(p, T_RPAREN, "',' or ')'");
      break;
    }
    if (st) {
      for (size_t i = 0; i < n; i++) dk_expr_free(items[i]);
      dk__free(p->alloc, items);
      goto cleanup;
    }
    dk_expr *in;
    st = dk_expr_in(&in, a, items, n, p->err);
    dk__free(p->alloc, items);
    a = NULL;
    if (st) return st;
    if (negate) return dk_expr_not(out, in, p->err);
    *out = in;
    return DK_OK;
  }
  if (is_kw(p, &t, "LIKE")) {
    DK_CHECK_GOTO(advance(p));
    if (p->cur.kind != T_STRING) {
      st = lex_error(p, p->cur.start, "LIKE needs a string pattern");
      goto cleanup;
    }
    char *pat = NULL;
    size_t len = 0;
    tok pt = p->cur;
    DK_CHECK_GOTO(unquote(p, &pt, &pat, &len));
    st = advance(p);
    dk_expr *r = NULL;
    if (!st) {
      st = dk_expr_like(&r, a, pat, len, p->err);
      a = NULL;
      if (st && p->err && !strstr(p->err->message, "offset"))
        dk__error_prefix(p->err, "at offset %zu", pt.start);
    }
    dk__free(p->alloc, pat);
    if (st) goto cleanup;
    if (negate) return dk_expr_not(out, r, p->err);
    *out = r;
    return DK_OK;
  }
  *out = a;
  return DK_OK;
cleanup:
  dk_expr_free(a);
  return st;
}

static dk_status parse_not(parser *p, dk_expr **out) {
  if (++p->depth > DK_EXPR_MAX_DEPTH)
    return lex_error(p, p->cur.start, "expression nests too deeply");
  dk_status st;
  if (is_kw(p, &p->cur, "NOT")) {
    DK_RETURN_NOT_OK(advance(p));
    dk_expr *a;
    DK_RETURN_NOT_OK(parse_not(p, &a));
    st = dk_expr_not(out, a, p->err);
  } else {
    st = parse_predicate(p, out);
  }
  p->depth--;
  return st;
}

static dk_status parse_junction(parser *p, dk_expr **out, bool is_or) {
  dk_expr **items = NULL;
  size_t n = 0, cap = 0;
  dk_status st = DK_OK;
  for (;;) {
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 4;
      dk_expr **ni = dk__realloc(p->alloc, items, nc * sizeof *ni);
      if (!ni) {
        st = dk__error_set(p->err, DK_NOMEM, "out of memory (parser)");
        break;
      }
      items = ni;
      cap = nc;
    }
    st = is_or ? parse_junction(p, &items[n], false) : parse_not(p, &items[n]);
    if (st) break;
    n++;
    if (!is_kw(p, &p->cur, is_or ? "OR" : "AND")) break;
    st = advance(p);
    if (st) break;
  }
  if (st) {
    for (size_t i = 0; i < n; i++) dk_expr_free(items[i]);
  } else {
    st = is_or ? dk_expr_or_n(out, items, n, p->err) : dk_expr_and_n(out, items, n, p->err);
  }
  dk__free(p->alloc, items);
  return st;
}

static dk_status parse_or(parser *p, dk_expr **out) {
  if (++p->depth > DK_EXPR_MAX_DEPTH)
    return lex_error(p, p->cur.start, "expression nests too deeply");
  dk_status st = parse_junction(p, out, true);
  p->depth--;
  return st;
}

dk_status dk_expr_parse_v2(dk_expr **out, const char *text, size_t len,
                           const dk_expr_parse_options *opts, dk_error *err) {
  *out = NULL;
  DK_RETURN_IF(opts && opts->version > DK_EXPR_PARSE_OPTIONS_VERSION, DK_INVALID, err,
               "dk_expr_parse: options version %u is newer than this dk (%d)", opts->version,
               DK_EXPR_PARSE_OPTIONS_VERSION);
  DK_RETURN_IF(!text && len, DK_INVALID, err, "NULL expression text");
  parser p = {.s = text ? text : "", .n = len, .alloc = opts ? opts->alloc : NULL, .err = err};
  DK_RETURN_NOT_OK(lex(&p, 0, &p.cur));
  if (p.cur.kind == T_EOF) return lex_error(&p, 0, "empty expression");
  dk_expr *e = NULL;
  DK_RETURN_NOT_OK(parse_or(&p, &e));
  if (p.cur.kind != T_EOF) {
    dk_expr_free(e);
    return lex_error(&p, p.cur.start, "unexpected text after the expression");
  }
  *out = e;
  return DK_OK;
}

dk_status dk_expr_parsen(dk_expr **out, const char *text, size_t len, dk_error *err) {
  return dk_expr_parse_v2(out, text, len, NULL, err);
}

dk_status dk_expr_parse(dk_expr **out, const char *text, dk_error *err) {
  return dk_expr_parse_v2(out, text, text ? strlen(text) : 0, NULL, err);
}
