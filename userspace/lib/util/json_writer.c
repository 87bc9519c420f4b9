// SPDX-License-Identifier: GPL-2.0
/* A small streaming JSON writer: see json_writer.h. */
#include <inttypes.h>
#include <math.h>

#include "util/json_writer.h"

void jsonw_init(struct json_writer *w, FILE *out)
{
	*w = (struct json_writer){ .out = out };
}

/* Before any value or name: the comma after the level's previous one.
 * Top-level values are documents of their own, one per line: no comma. */
static void sep(struct json_writer *w)
{
	if (w->after_name) {
		w->after_name = false;
		return;
	}
	if (w->depth && w->filled[w->depth])
		fputc(',', w->out);
	w->filled[w->depth] = true;
}

static void begin(struct json_writer *w, char c)
{
	sep(w);
	fputc(c, w->out);
	if (w->depth < JSONW_MAX_DEPTH)
		w->depth++;
	w->filled[w->depth] = false;
}

static void finish(struct json_writer *w, char c)
{
	fputc(c, w->out);
	if (w->depth)
		w->depth--;
	if (!w->depth)
		fputc('\n', w->out);
}

void jsonw_start_object(struct json_writer *w)
{
	begin(w, '{');
}

void jsonw_end_object(struct json_writer *w)
{
	finish(w, '}');
}

void jsonw_start_array(struct json_writer *w)
{
	begin(w, '[');
}

void jsonw_end_array(struct json_writer *w)
{
	finish(w, ']');
}

static void quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void jsonw_name(struct json_writer *w, const char *name)
{
	sep(w);
	quoted(w->out, name);
	fputc(':', w->out);
	w->after_name = true;
}

/* A top-level scalar is a document of its own: end its line. */
static void scalar_done(struct json_writer *w)
{
	if (!w->depth)
		fputc('\n', w->out);
}

void jsonw_string(struct json_writer *w, const char *s)
{
	sep(w);
	quoted(w->out, s);
	scalar_done(w);
}

void jsonw_uint(struct json_writer *w, uint64_t v)
{
	sep(w);
	fprintf(w->out, "%" PRIu64, v);
	scalar_done(w);
}

void jsonw_int(struct json_writer *w, int64_t v)
{
	sep(w);
	fprintf(w->out, "%" PRId64, v);
	scalar_done(w);
}

void jsonw_bool(struct json_writer *w, bool v)
{
	sep(w);
	fputs(v ? "true" : "false", w->out);
	scalar_done(w);
}

void jsonw_null(struct json_writer *w)
{
	sep(w);
	fputs("null", w->out);
	scalar_done(w);
}

void jsonw_float_fmt(struct json_writer *w, const char *fmt, double v)
{
	if (!isfinite(v)) {
		jsonw_null(w);
		return;
	}
	sep(w);
	fprintf(w->out, fmt, v);
	scalar_done(w);
}

void jsonw_string_field(struct json_writer *w, const char *name, const char *s)
{
	jsonw_name(w, name);
	jsonw_string(w, s);
}

void jsonw_uint_field(struct json_writer *w, const char *name, uint64_t v)
{
	jsonw_name(w, name);
	jsonw_uint(w, v);
}

void jsonw_int_field(struct json_writer *w, const char *name, int64_t v)
{
	jsonw_name(w, name);
	jsonw_int(w, v);
}

void jsonw_bool_field(struct json_writer *w, const char *name, bool v)
{
	jsonw_name(w, name);
	jsonw_bool(w, v);
}

void jsonw_null_field(struct json_writer *w, const char *name)
{
	jsonw_name(w, name);
	jsonw_null(w);
}

void jsonw_float_field_fmt(struct json_writer *w, const char *name,
			   const char *fmt, double v)
{
	jsonw_name(w, name);
	jsonw_float_fmt(w, fmt, v);
}
