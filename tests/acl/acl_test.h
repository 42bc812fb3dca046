/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the acl suites (t_acl_ prefix): captured log lines, small files, and
 * the {4,2} float Add of the samples and a big one. */
#ifndef ADUMP_TEST_ACL_H
#define ADUMP_TEST_ACL_H

#include <stddef.h>

#include "acl/acl_int.h"
#include "helpers.h"

/* Collect every log line from now on (any level); t_acl_log_has() searches them. */
void t_acl_log_capture(void);
int t_acl_log_has(const char *needle);
/* How many captured lines contain @needle. */
int t_acl_log_count(const char *needle);

/* Write @text to <dir>/<name>; returns the malloc'd path (caller frees). */
char *t_acl_write(const char *dir, const char *name, const char *text);

struct t_acl_add {
	void *self_dev, *other_dev, *out_dev;
	aclTensor *self, *other, *out;
	aclScalar *alpha;
};

/* Device tensors for self = 0..7, other = 1,1,1,2,2,2,3,3, out = 0 ({4,2} float). */
void t_acl_add_setup(struct t_acl_add *a);
/* aclnnAddGetWorkspaceSize + aclnnAdd on @stream; returns aclnnAdd's status. */
int t_acl_add_launch(struct t_acl_add *a, aclrtStream stream);
void t_acl_add_teardown(struct t_acl_add *a);

/* A {rows, cols} float Add, out = self + 2 * other, each tensor filled with i % 1000. */
struct t_acl_big {
	void *dev[3];
	aclTensor *t[3];
	aclScalar *alpha;
};

void t_acl_big_setup(struct t_acl_big *b, int64_t rows, int64_t cols);
/* aclnnAdd on @stream, then aclrtSynchronizeStream, each checked. */
void t_acl_big_launch(struct t_acl_big *b, aclrtStream stream);
void t_acl_big_teardown(struct t_acl_big *b);

/* aclInit(@config) + aclrtSetDevice(0) + aclrtCreateStream, each checked. */
aclrtStream t_acl_start(const char *config);
/* aclrtDestroyStream + aclrtResetDeviceForce(0) + aclFinalize, each checked. */
void t_acl_stop(aclrtStream stream);

#endif
