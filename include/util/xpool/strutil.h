/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* String helpers shared by parsers and validators. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Enough for any quoted value xp_quote() writes: 64 shown bytes, escaped, quotes and "...". */
#define XP_QUOTE_MAX 300

/*
 * Writes s as a double-quoted string fit for an error message: '"' and '\\' escaped, bytes
 * outside printable ASCII as \xNN, cut after 64 input bytes with "..." appended. Returns buf.
 * A NULL s prints as (null).
 */
char *xp_quote(const char *s, char buf[static XP_QUOTE_MAX]);

/* Like xp_quote() without the quotes: for map keys inside a field path. */
char *xp_escape(const char *s, char buf[static XP_QUOTE_MAX]);

/* Like xp_quote() for a buffer that may hold NUL bytes. */
char *xp_quote_mem(const char *s, size_t len, char buf[static XP_QUOTE_MAX]);

/* strdup that returns NULL for NULL. */
char *xp_strdup0(const char *s);

bool xp_streq0(const char *a, const char *b);

/* The value of a hexadecimal digit (either case), or -1 when c is none. */
int xp_hex_digit(char c);
/* True when s[0..len) are lowercase hexadecimal digits (what xp_hex_encode() writes). */
bool xp_hex_is_lower(const char *s, size_t len);
/* Writes data[0..len) as 2 * len lowercase hexadecimal digits and a NUL into out. */
void xp_hex_encode(const void *data, size_t len, char *out);
/* Reads 2 * len hexadecimal digits (either case) of text into out[0..len): 0, or -EINVAL (out
 * partly written) when one is not a digit. */
int xp_hex_decode(const char *text, void *out, size_t len);

/* True when s[0..len) is well-formed UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF). */
bool xp_utf8_valid(const char *s, size_t len);
/* Writes code point cp (at most U+10FFFF, not a surrogate) as 1 to 4 bytes of UTF-8 into out;
 * returns how many. */
size_t xp_utf8_put(char *out, uint32_t cp);
