/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small streaming JSON writer, in the manner of bpftool's json_writer:
 * the caller says what comes (an object, a name, a value), the writer puts
 * the commas and colons and escapes every string, so a name containing a
 * double quote or a control character still makes valid JSON. Output is
 * compact; a value at the top level ends with a newline (one JSON document
 * per line, as `nfslice stats --json --interval` prints them).
 *
 *	struct json_writer w;
 *
 *	jsonw_init(&w, stdout);
 *	jsonw_start_object(&w);
 *	jsonw_string_field(&w, "name", name);
 *	jsonw_name(&w, "slots");
 *	jsonw_uint(&w, 4096);
 *	jsonw_end_object(&w);		-> {"name":"...","slots":4096}\n
 */
#ifndef NFSL_JSON_WRITER_H
#define NFSL_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Objects and arrays nest at most this deep. */
#define JSONW_MAX_DEPTH 32

struct json_writer {
	FILE *out;
	unsigned int depth;  /* open objects and arrays */
	bool after_name;     /* a name was written: its value comes next */
	bool filled[JSONW_MAX_DEPTH + 1]; /* the level holds a value already */
};

void jsonw_init(struct json_writer *w, FILE *out);

void jsonw_start_object(struct json_writer *w);
void jsonw_end_object(struct json_writer *w);
void jsonw_start_array(struct json_writer *w);
void jsonw_end_array(struct json_writer *w);

/* The name of the next member of the current object. */
void jsonw_name(struct json_writer *w, const char *name);

/* Values. Strings are escaped: " and \ with a backslash, control
 * characters (and DEL) as \u00XX; other bytes pass as they are (UTF-8). */
void jsonw_string(struct json_writer *w, const char *s);
void jsonw_uint(struct json_writer *w, uint64_t v);
void jsonw_int(struct json_writer *w, int64_t v);
void jsonw_bool(struct json_writer *w, bool v);
void jsonw_null(struct json_writer *w);
/* A number printed with @fmt (a printf format for one double, e.g.
 * "%.2f"); NaN and infinities, which JSON lacks, become null. */
void jsonw_float_fmt(struct json_writer *w, const char *fmt, double v);

/* A name and its value in one call. */
void jsonw_string_field(struct json_writer *w, const char *name, const char *s);
void jsonw_uint_field(struct json_writer *w, const char *name, uint64_t v);
void jsonw_int_field(struct json_writer *w, const char *name, int64_t v);
void jsonw_bool_field(struct json_writer *w, const char *name, bool v);
void jsonw_null_field(struct json_writer *w, const char *name);
void jsonw_float_field_fmt(struct json_writer *w, const char *name,
			   const char *fmt, double v);

#endif /* NFSL_JSON_WRITER_H */
