/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The "table" view of objects, as `kubectl get` prints them.
 *
 * kubectl asks the server for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and prints
 * the meta.k8s.io/v1 Table it gets back as it is. The server builds such Tables with
 * xp_table_build(); the CLI prints a Table (ours or any Kubernetes server's) with
 * xp_table_print(). The columns each kind gets, and what they mean, are in docs/tables.md.
 *
 * Everything here is pure code over jansson values: no I/O besides the FILE the caller passes,
 * no clock (the caller passes `now`). Objects are read defensively: a missing or malformed field
 * never fails a build, its cell reads "<unknown>" or "<none>" as kubectl's would.
 */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "xpool/duration.h"
#include "xpool/error.h"

/* What each row's `object` holds, as ?includeObject=None|Metadata|Object asks kube-apiserver. */
enum xp_table_include {
        XP_TABLE_INCLUDE_NONE,     /* no `object` member */
        XP_TABLE_INCLUDE_METADATA, /* a PartialObjectMetadata: kube-apiserver's default */
        XP_TABLE_INCLUDE_OBJECT,   /* the whole object */
};

/*
 * Builds a meta.k8s.io/v1 Table for `items` (borrowed: a JSON array of objects of `kind`: "Pod",
 * "Node", "Event", "Namespace", "Lease"; any other kind gets NAME and AGE), ages computed
 * against `now`. An item that is not a JSON object gets the row an empty object would; a NULL or
 * non-array `items` is an empty list.
 *
 * list_version is the list's resourceVersion, the Table's metadata.resourceVersion (valid UTF-8,
 * as the store's decimal versions are); may be NULL.
 *
 * include selects rows[].object: none; a PartialObjectMetadata holding a deep copy of the item's
 * metadata ({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{...}});
 * or a deep copy of the whole object.
 *
 * All columns are built, priority > 0 ones included, as kube-apiserver does: the client decides
 * what to show. On success *ret receives a new reference (caller json_decref()s it).
 * Returns 0 or -ENOMEM (then *ret is untouched).
 */
int xp_table_build(const char *kind,
                   const json_t *items,
                   const char *list_version,
                   time_t now,
                   enum xp_table_include include,
                   json_t **ret);

/*
 * Decodes the text of a plain list (kind-List: {"items": [...], "metadata": {...}, ...}) for
 * xp_table_build(): as json_loadb() would, less the members of each item that no table reads
 * (metadata.managedFields; spec.volumes, spec.tolerations, spec.affinity), which are most of a
 * pod's text and most of the time its parse takes. Its items are then not the objects the server
 * has, only enough for their rows. On success *ret receives a new reference. Returns 0; -EBADMSG
 * when the text is not a JSON object (parse it whole to say where); -ENOMEM.
 */
int xp_table_list_decode(const char *text, size_t len, json_t **ret);

/*
 * Decodes the text of one object as an item of xp_table_list_decode()'s list. The metadata's
 * value is text[*ret_metadata_start..+*ret_metadata_len) (0 and 0 without one; either pointer may
 * be NULL): a row's PartialObjectMetadata holds it whole, managedFields too, and the caller can
 * copy it as text rather than parse it. Same returns (the span is set only on success).
 */
int xp_table_object_decode(const char *text,
                           size_t len,
                           json_t **ret,
                           size_t *ret_metadata_start,
                           size_t *ret_metadata_len);

/*
 * Prints a Table (ours or any Kubernetes server's, borrowed) as aligned text the way kubectl does:
 * a header line of the column names in upper case (`NOMINATED NODE`), then one line per row;
 * every column but the last padded to its widest cell plus three spaces (at least six wide),
 * widths counted in UTF-8 characters. Priority > 0 columns only when `wide`; no header line when
 * `no_headers`; a NAMESPACE first column taken from each row's object metadata when
 * `with_namespace` ("<unknown>" for a row without an object). A Table without rows prints
 * nothing at all: "No resources found" is the caller's job.
 *
 * Cells print as kubectl prints them: strings cut at the first newline, carriage return or form
 * feed with "..." appended; other control characters shown in caret notation (ESC as "^[") so a
 * cell cannot drive the terminal; integers in decimal; other numbers, booleans, objects and lists
 * as compact JSON; null as nothing. A row's cells beyond the column definitions are ignored; a
 * row with fewer cells ends early.
 *
 * Returns 0; -EINVAL when `table` is not a Table (err says what is wrong and where, e.g.
 * "columnDefinitions[2].name is not a string"), and then nothing is written; -ENOMEM; -EIO on
 * write errors (a partial table may have been written).
 */
int xp_table_print(FILE *out,
                   const json_t *table,
                   bool wide,
                   bool no_headers,
                   bool with_namespace,
                   struct xp_error *err);

/*
 * The age of an RFC 3339 timestamp (a JSON string, borrowed, may be NULL) at `now`, as kubectl's
 * AGE column shows it: xp_duration_human(now - timestamp), or "<unknown>" when the
 * timestamp is missing or malformed.
 */
void xp_table_age(const json_t *timestamp, time_t now, char *buf, size_t size);
