/* SPDX-License-Identifier: Apache-2.0 */
/* tools/: the `adump` command. Each subcommand is int cmd_<name>(int argc, char **argv),
 * argv[0] being the subcommand's name; it returns the process exit code. */
#ifndef ADUMP_TOOL_H
#define ADUMP_TOOL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Parse "123", "4K", "2M", "1G" (powers of 1024) into *out. Return: 0, or -1 if malformed. */
int tool_parse_size(const char *s, uint64_t *out);
/* Parse a whole unsigned number, decimal or 0x-hex ("42", "0x2a"; no sign, no suffix).
 * Return: 0, or -1 if malformed or out of range. */
int tool_parse_u64(const char *s, uint64_t *out);
/* Whether stderr is a terminal (progress bars go there only then). */
bool tool_is_tty(void);
/* Parse --threads' value, 1 to 1024; otherwise say so on stderr as "adump <cmd>: --threads: ...".
 * Return: 0, or -1 (the caller exits with the usage status). */
int tool_parse_threads(const char *cmd, const char *arg, unsigned *out);
/* One line of a message to stderr (a trailing newline of @fmt is the line's end), each control
 * byte written \xNN as adump_log() does: names from dumps (op names, paths found in a
 * capture) reach the terminal as text and never forge a second line. */
void tool_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tool_verr(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/* @s for a human-readable line of stdout: @s itself if it holds no control byte, otherwise
 * escaped as tool_err() does (\xNN) into one of 4 per-thread buffers reused in turn (so up
 * to 4 in one printf), cut at 8 KiB; NULL as "". Names from a capture go through it. */
const char *tool_text(const char *s);
/* Write @s as a JSON string, quoted and escaped; NULL as "". */
void tool_json_str(FILE *f, const char *s);
/* CLOCK_MONOTONIC in seconds, for the "in N s" of a summary. */
double tool_now_seconds(void);

int cmd_bench(int argc, char **argv);
int cmd_compare(int argc, char **argv) __attribute__((weak));
int cmd_convert(int argc, char **argv) __attribute__((weak));
int cmd_export(int argc, char **argv) __attribute__((weak));
int cmd_inspect(int argc, char **argv) __attribute__((weak));
int cmd_report(int argc, char **argv) __attribute__((weak));
int cmd_scan(int argc, char **argv) __attribute__((weak));
int cmd_verify(int argc, char **argv) __attribute__((weak));
int cmd_unpack(int argc, char **argv) __attribute__((weak));

#endif
