/* SPDX-License-Identifier: MIT */
/*
 * A blocking Varlink client for command-line tools (gpreemptctl): connect
 * to a socket and make calls, each step bounded by a timeout.
 */
#pragma once

struct json_object;
struct varlink_client;

/*
 * Connects to the socket at path. Returns -ETIMEDOUT when the server has
 * not taken the connection within timeout_ms (> 0): its queue of
 * connections is full, its loop may be stuck. Or another -errno (-ENOENT,
 * -ECONNREFUSED: no server). timeout_ms also bounds each send of a call on
 * the connection.
 */
int varlink_client_connect(const char *path, int timeout_ms, struct varlink_client **ret_client);
void varlink_client_free(struct varlink_client *c);

/*
 * Calls method with parameters (borrowed; NULL for none) and waits up to
 * timeout_ms for the reply. Returns 0 when a reply arrived: *ret_error is
 * NULL and *ret_parameters the reply's parameters, or *ret_error names the
 * error (and *ret_parameters its parameters). Returns -ETIMEDOUT, -EBADMSG
 * (the reply is not Varlink), -ECONNRESET, or another -errno otherwise.
 * The caller frees *ret_error and puts *ret_parameters.
 */
int varlink_client_call(struct varlink_client *c, const char *method, struct json_object *parameters,
                        int timeout_ms, struct json_object **ret_parameters, char **ret_error);
