/* SPDX-License-Identifier: MIT */
/*
 * The Varlink server and client: introspection, dispatch, pipelined calls,
 * deferred calls (answered later, or dropped when their client leaves),
 * replies that are UTF-8 whatever the methods put in them, a connect that
 * gives up on a stuck server, authorisation by SO_PEERCRED, and hostile
 * clients (garbage, no NUL, huge, deep, slow, too many, not reading) that
 * must get an error or a disconnect, never a hang.
 */
#include <errno.h>
#include <json.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <grp.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "varlink-client.h"
#include "varlink-protocol.h"
#include "varlink-server.h"

#define READ_GID 4242
#define NOBODY 65534

static char socket_path[108];
static pthread_t server_thread;
static int ready_pipe[2];

static void method_echo(struct varlink_call *call, struct json_object *params, void *userdata)
{
        varlink_call_reply(call, json_object_get(params));
}

static void method_silent(struct varlink_call *call, struct json_object *params, void *userdata)
{
}

/* Text from outside, as a method may pass it on: a tracer's name, a command line, a file's bytes. */
static struct json_object *not_utf8(void)
{
        struct json_object *p = json_object_new_object(), *list = json_object_new_array();

        json_object_object_add(p, "name", json_object_new_string("\xff\xfe"));
        json_object_array_add(list, json_object_new_string("esc\033 caf\xc3\xa9"));
        json_object_array_add(list, json_object_new_string("cut \xe2\x82"));
        json_object_object_add(p, "list", list);
        json_object_object_add(p, "surrogate", json_object_new_string("\xed\xa0\x80"));
        return p;
}

static void method_not_utf8(struct varlink_call *call, struct json_object *params, void *userdata)
{
        varlink_call_reply(call, not_utf8());
}

static void method_not_utf8_error(struct varlink_call *call, struct json_object *params, void *userdata)
{
        varlink_call_error(call, "Failed", not_utf8());
}

/* The loop turns in which Turn was called, one entry per call. */
#define TURNS_MAX 4096
static uint64_t turns[TURNS_MAX];
static size_t n_turns;

static void method_turn(struct varlink_call *call, struct json_object *params, void *userdata)
{
        if (n_turns < TURNS_MAX)
                sd_event_get_iteration(userdata, &turns[n_turns++]);
        varlink_call_reply(call, NULL);
}

static void method_quit(struct varlink_call *call, struct json_object *params, void *userdata)
{
        sd_event_exit(userdata, 0);
        varlink_call_reply(call, NULL);
}

/* Defer keeps its call here for Release to answer; Dropped says how many went with their connection. */
static struct varlink_call *deferred;
static int n_dropped;

static void deferred_dropped(void *userdata)
{
        assert_ptr_equal(userdata, &deferred);
        deferred = NULL;
        n_dropped++;
}

static void method_defer(struct varlink_call *call, struct json_object *params, void *userdata)
{
        assert_null(deferred);
        assert_int_equal(varlink_call_defer(call, deferred_dropped, &deferred, &deferred), 0);
}

/* Answers the deferred call with Release's parameters. */
static void method_release(struct varlink_call *call, struct json_object *params, void *userdata)
{
        if (!deferred) {
                varlink_call_error(call, "NothingDeferred", NULL);
                return;
        }
        assert_int_equal(varlink_call_reply(deferred, json_object_get(params)), 0);
        deferred = NULL;
        varlink_call_reply(call, NULL);
}

static void method_dropped(struct varlink_call *call, struct json_object *params, void *userdata)
{
        struct json_object *p = json_object_new_object();

        json_object_object_add(p, "dropped", json_object_new_int(n_dropped));
        varlink_call_reply(call, p);
}

static const struct varlink_method methods[] = {
        { "Defer", VARLINK_ACCESS_READ, method_defer },
        { "Release", VARLINK_ACCESS_READ, method_release },
        { "Dropped", VARLINK_ACCESS_READ, method_dropped },
        { "Echo", VARLINK_ACCESS_READ, method_echo },
        { "Change", VARLINK_ACCESS_WRITE, method_echo },
        { "Silent", VARLINK_ACCESS_READ, method_silent },
        { "NotUtf8", VARLINK_ACCESS_READ, method_not_utf8 },
        { "NotUtf8Error", VARLINK_ACCESS_READ, method_not_utf8_error },
        { "Quit", VARLINK_ACCESS_WRITE, method_quit },
        { "Turn", VARLINK_ACCESS_READ, method_turn },
};

static const struct varlink_interface iface = {
        .name = "io.gpreempt.Test",
        .description = "interface io.gpreempt.Test\nmethod Echo() -> ()\nerror PermissionDenied ()\n"
                       "error InternalError ()\n"
                       "error TooManyConnections (limit: int, scope: (user, unprivileged, all))\n",
        .methods = methods,
        .n_methods = sizeof(methods) / sizeof(methods[0]),
};

static void *serve(void *arg)
{
        static const struct varlink_service_info info = { "gpreempt", "test", "0", "https://example.invalid" };
        struct varlink_server *s = NULL;
        sd_event *e = NULL;
        struct stat st;

        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(varlink_server_new(e, &info, &iface, READ_GID, e, &s), 0);
        assert_int_equal(varlink_server_listen_path(s, socket_path, &st), 0);
        assert_int_equal(write(ready_pipe[1], "x", 1), 1);
        sd_event_loop(e);
        varlink_server_free(s);
        sd_event_unref(e);
        return NULL;
}

static int setup(void **state)
{
        char c;

        snprintf(socket_path, sizeof(socket_path), "/tmp/gpreempt-varlink-test-%d.sock", (int)getpid());
        assert_int_equal(pipe(ready_pipe), 0);
        assert_int_equal(pthread_create(&server_thread, NULL, serve, NULL), 0);
        assert_int_equal(read(ready_pipe[0], &c, 1), 1);
        return 0;
}

static int teardown(void **state)
{
        struct varlink_client *c;
        struct json_object *p;
        char *err;

        assert_int_equal(varlink_client_connect(socket_path, 5000, &c), 0);
        assert_int_equal(varlink_client_call(c, "io.gpreempt.Test.Quit", NULL, 5000, &p, &err), 0);
        json_object_put(p);
        varlink_client_free(c);
        pthread_join(server_thread, NULL);
        unlink(socket_path);
        return 0;
}

static int raw_connect(void)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        assert_true(fd >= 0);
        strcpy(sa.sun_path, socket_path);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        return fd;
}

static void raw_send(int fd, const void *data, size_t len)
{
        const char *p = data;

        while (len > 0) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return; /* the server may hang up mid-way: that is allowed */
                p += n;
                len -= (size_t)n;
        }
}

/* Reads one reply; returns it, or NULL on disconnect. */
static struct json_object *raw_message(int fd, int timeout_ms)
{
        static char buf[VARLINK_MESSAGE_MAX];
        size_t len = 0;
        struct json_object *msg;

        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                ssize_t n;

                if (poll(&pfd, 1, timeout_ms) <= 0)
                        fail_msg("no reply within %d ms", timeout_ms);
                n = recv(fd, buf + len, 1, 0);
                if (n <= 0)
                        return NULL;
                if (buf[len] == '\0')
                        break;
                len++;
                assert_true(len < sizeof(buf));
        }
        assert_int_equal(varlink_parse_message(buf, len, &msg), 0);
        return msg;
}

/* Reads one reply; returns its error name (static buffer) or "" for success, NULL on disconnect. */
static const char *raw_reply(int fd, int timeout_ms)
{
        static char error[256];
        struct json_object *msg = raw_message(fd, timeout_ms), *e;

        if (!msg)
                return NULL;
        error[0] = '\0';
        if (json_object_object_get_ex(msg, "error", &e))
                snprintf(error, sizeof(error), "%s", json_object_get_string(e));
        json_object_put(msg);
        return error;
}

/* Reads one reply, which must be error ("" for success). */
static void reply_expect(int fd, const char *error)
{
        const char *got = raw_reply(fd, 5000);

        if (!got)
                fail_msg("hung up on instead of answered %s", error[0] ? error : "with success");
        assert_string_equal(got, error);
}

static void call_expect(int fd, const char *message, const char *error)
{
        raw_send(fd, message, strlen(message) + 1);
        reply_expect(fd, error);
}

static void test_introspection(void **state)
{
        struct varlink_client *c;
        struct json_object *p, *arg, *v;
        char *err;

        assert_int_equal(varlink_client_connect(socket_path, 5000, &c), 0);
        assert_int_equal(varlink_client_call(c, "org.varlink.service.GetInfo", NULL, 5000, &p, &err), 0);
        assert_null(err);
        assert_true(json_object_object_get_ex(p, "interfaces", &v));
        assert_int_equal(json_object_array_length(v), 2);
        assert_string_equal(json_object_get_string(json_object_array_get_idx(v, 1)), "io.gpreempt.Test");
        json_object_put(p);

        arg = json_object_new_object();
        json_object_object_add(arg, "interface", json_object_new_string("io.gpreempt.Test"));
        assert_int_equal(varlink_client_call(c, "org.varlink.service.GetInterfaceDescription", arg, 5000, &p, &err), 0);
        assert_null(err);
        assert_true(json_object_object_get_ex(p, "description", &v));
        assert_non_null(strstr(json_object_get_string(v), "interface io.gpreempt.Test"));
        json_object_put(p);
        json_object_put(arg);

        arg = json_object_new_object();
        json_object_object_add(arg, "interface", json_object_new_string("com.example.Nope"));
        assert_int_equal(varlink_client_call(c, "org.varlink.service.GetInterfaceDescription", arg, 5000, &p, &err), 0);
        assert_string_equal(err, VARLINK_ERROR_INTERFACE_NOT_FOUND);
        free(err);
        json_object_put(p);
        json_object_put(arg);
        varlink_client_free(c);
}

static void test_dispatch_and_errors(void **state)
{
        struct varlink_client *c;
        struct json_object *p, *arg, *v;
        char *err;
        int fd;

        assert_int_equal(varlink_client_connect(socket_path, 5000, &c), 0);
        arg = json_object_new_object();
        json_object_object_add(arg, "x", json_object_new_int(7));
        assert_int_equal(varlink_client_call(c, "io.gpreempt.Test.Echo", arg, 5000, &p, &err), 0);
        assert_null(err);
        assert_true(json_object_object_get_ex(p, "x", &v));
        assert_int_equal(json_object_get_int(v), 7);
        json_object_put(p);
        json_object_put(arg);
        assert_int_equal(varlink_client_call(c, "io.gpreempt.Test.Nope", NULL, 5000, &p, &err), 0);
        assert_string_equal(err, VARLINK_ERROR_METHOD_NOT_FOUND);
        free(err);
        json_object_put(p);
        assert_int_equal(varlink_client_call(c, "io.gpreempt.Test.Silent", NULL, 5000, &p, &err), 0);
        assert_string_equal(err, "io.gpreempt.Test.InternalError");
        free(err);
        json_object_put(p);
        varlink_client_free(c);

        fd = raw_connect();
        call_expect(fd, "{\"method\":\"com.example.X.Y\"}", VARLINK_ERROR_INTERFACE_NOT_FOUND);
        call_expect(fd, "{\"method\":\"NoDot\"}", VARLINK_ERROR_INTERFACE_NOT_FOUND);
        call_expect(fd, "{\"method\":\"org.varlink.service.Nope\"}", VARLINK_ERROR_METHOD_NOT_FOUND);
        /* valid UTF-8 beyond ASCII passes, and is echoed back as JSON */
        call_expect(fd, "{\"method\":\"io.gpreempt.Test.\xc3\x9cmlaut\xe2\x82\xac\xf0\x9f\x98\x80\"}",
                    VARLINK_ERROR_METHOD_NOT_FOUND);
        /* a oneway call gets no reply: the next reply is the next call's */
        static const char oneway[] = "{\"method\":\"io.gpreempt.Test.Echo\",\"oneway\":true}";
        raw_send(fd, oneway, sizeof(oneway));
        call_expect(fd, "{\"method\":\"io.gpreempt.Test.Echo\",\"parameters\":{}}", "");
        close(fd);
}

/*
 * Calls sent together, without waiting for the replies (Varlink allows it:
 * a client may pipeline), are each answered, in order, at once: the calls
 * after the first are already read when its reply goes out, so no new data
 * will announce them, and none of them is a partial message to time out.
 */
static void test_pipelined_calls(void **state)
{
        enum { CALLS = 64 };
        static const char echo[] = "{\"method\":\"io.gpreempt.Test.Echo\"}";
        static const char batch[] = "{\"method\":\"org.varlink.service.GetInfo\"}\0"
                                    "{\"method\":\"io.gpreempt.Test.Echo\",\"oneway\":true}\0"
                                    "{\"method\":\"io.gpreempt.Test.Nope\"}\0"
                                    "{\"method\":\"io.gpreempt.Test.Echo\"}\0"
                                    "{\"meth";
        char *many = malloc(CALLS * sizeof(echo)), *p = many;
        int fd = raw_connect();

        for (int i = 0; i < CALLS; i++, p += sizeof(echo))
                memcpy(p, echo, sizeof(echo));
        raw_send(fd, many, CALLS * sizeof(echo));
        for (int i = 0; i < CALLS; i++)
                reply_expect(fd, "");
        call_expect(fd, echo, "");
        free(many);

        /* the oneway call has no reply; the partial message at the end times out as any does */
        raw_send(fd, batch, sizeof(batch) - 1);
        reply_expect(fd, "");
        reply_expect(fd, VARLINK_ERROR_METHOD_NOT_FOUND);
        reply_expect(fd, "");
        assert_null(raw_reply(fd, 5000));
        close(fd);
}

/* Whether a reply (or a hang-up) comes on fd within ms. */
static bool answered_within(int fd, int ms)
{
        struct pollfd pfd = { .fd = fd, .events = POLLIN };

        return poll(&pfd, 1, ms) > 0;
}

/*
 * A deferred call is answered when its method's owner answers it, and the
 * calls sent after it on its connection wait until then, to be answered in
 * order; a deferred call whose client leaves is dropped, its owner told.
 */
static void test_deferred_call(void **state)
{
        static const char defer[] = "{\"method\":\"io.gpreempt.Test.Defer\"}";
        static const char echo[] = "{\"method\":\"io.gpreempt.Test.Echo\",\"parameters\":{\"n\":2}}";
        static const char dropped[] = "{\"method\":\"io.gpreempt.Test.Dropped\"}";
        int waiting = raw_connect(), other = raw_connect();
        struct json_object *msg, *v;

        raw_send(waiting, defer, sizeof(defer));
        raw_send(waiting, echo, sizeof(echo));
        call_expect(other, "{\"method\":\"io.gpreempt.Test.Echo\"}", ""); /* the server goes on */
        assert_false(answered_within(waiting, 200));
        call_expect(other, "{\"method\":\"io.gpreempt.Test.Release\",\"parameters\":{\"n\":1}}", "");
        msg = raw_message(waiting, 5000);
        assert_true(json_object_object_get_ex(msg, "parameters", &v));
        assert_int_equal(json_object_get_int(json_object_object_get(v, "n")), 1);
        json_object_put(msg);
        msg = raw_message(waiting, 5000);
        assert_true(json_object_object_get_ex(msg, "parameters", &v));
        assert_int_equal(json_object_get_int(json_object_object_get(v, "n")), 2);
        json_object_put(msg);

        /* the client leaves while its call waits */
        raw_send(waiting, defer, sizeof(defer));
        close(waiting);
        for (int i = 0;; i++) {
                raw_send(other, dropped, sizeof(dropped));
                msg = raw_message(other, 5000);
                assert_true(json_object_object_get_ex(msg, "parameters", &v));
                if (json_object_get_int(json_object_object_get(v, "dropped")) == 1) {
                        json_object_put(msg);
                        break;
                }
                json_object_put(msg);
                assert_true(i < 500);
                usleep(10000);
        }
        call_expect(other, "{\"method\":\"io.gpreempt.Test.Release\"}", "io.gpreempt.Test.NothingDeferred");
        close(other);
}

/*
 * Oneway calls have no reply to wait for, so nothing else paces them: sent
 * together, they are still handled one per turn of the loop, and a client
 * cannot hold the loop with a buffer full of them.
 */
static void test_pipelined_oneway_calls_take_a_turn_each(void **state)
{
        enum { CALLS = 1000 };
        static const char oneway[] = "{\"method\":\"io.gpreempt.Test.Turn\",\"oneway\":true}";
        static const char last[] = "{\"method\":\"io.gpreempt.Test.Turn\"}";
        char *many = malloc(CALLS * sizeof(oneway)), *p = many;
        int fd = raw_connect();

        assert_non_null(many);
        for (int i = 0; i < CALLS; i++, p += sizeof(oneway))
                memcpy(p, oneway, sizeof(oneway));
        n_turns = 0;
        raw_send(fd, many, CALLS * sizeof(oneway));
        call_expect(fd, last, "");
        free(many);
        close(fd);
        assert_int_equal(n_turns, CALLS + 1);
        for (size_t i = 1; i < n_turns; i++)
                assert_true(turns[i] > turns[i - 1]);
}

/*
 * The buffer calls are taken from: messages come off the front one at a
 * time without the rest being moved each time, the NUL search finds each
 * message's end however the bytes arrived, and the limit counts only the
 * bytes held.
 */
static void test_buffer(void **state)
{
        enum { MESSAGES = 100 };
        struct varlink_buffer b = { .limit = 64 * 8 };
        char message[8] = "message", *nul;
        size_t held;

        for (int i = 0; i < 64; i++) {
                message[6] = (char)('0' + i % 10);
                assert_int_equal(varlink_buffer_append(&b, message, sizeof(message)), 0);
        }
        assert_int_equal(varlink_buffer_append(&b, "x", 1), -ENOBUFS);
        /* taking one off the front of many moves nothing */
        varlink_buffer_consume(&b, sizeof(message));
        assert_ptr_equal(varlink_buffer_head(&b), b.data + sizeof(message));
        /* and makes room for as many bytes */
        assert_int_equal(varlink_buffer_append(&b, "message", sizeof(message)), 0);
        varlink_buffer_done(&b);

        /* pieces of messages in, whole ones out, in order, across compactions */
        for (int i = 0, taken = 0; taken < MESSAGES;) {
                if (i < MESSAGES) {
                        bool whole = varlink_buffer_find_nul(&b);

                        message[6] = (char)('0' + i % 10);
                        assert_int_equal(varlink_buffer_append(&b, message, 3), 0);
                        assert_true((varlink_buffer_find_nul(&b) != NULL) == whole);
                        assert_int_equal(varlink_buffer_append(&b, message + 3, sizeof(message) - 3), 0);
                        i++;
                }
                /* two appended for each taken, until all are in */
                if (i < MESSAGES && i % 2)
                        continue;
                nul = varlink_buffer_find_nul(&b);
                assert_non_null(nul);
                assert_ptr_equal(nul, varlink_buffer_find_nul(&b));
                assert_int_equal(nul - varlink_buffer_head(&b), sizeof(message) - 1);
                assert_int_equal(varlink_buffer_head(&b)[6], '0' + taken % 10);
                held = b.size;
                varlink_buffer_consume(&b, sizeof(message));
                assert_int_equal(b.size, held - sizeof(message));
                taken++;
        }
        assert_int_equal(b.size, 0);
        assert_null(varlink_buffer_find_nul(&b));
        varlink_buffer_done(&b);
}

/*
 * A method may pass on text that is not UTF-8 (a tracer's name, a command
 * line, a configuration file); the reply is still JSON a strict reader
 * takes, with each byte that is not UTF-8 written as \xNN and everything
 * else as it was.
 */
static void test_replies_are_utf8(void **state)
{
        static const char *const passing_on[] = { "io.gpreempt.Test.NotUtf8", "io.gpreempt.Test.NotUtf8Error" };
        struct varlink_client *c;

        assert_int_equal(varlink_client_connect(socket_path, 5000, &c), 0);
        for (size_t i = 0; i < sizeof(passing_on) / sizeof(passing_on[0]); i++) {
                struct json_object *p, *list;
                char *err;

                assert_int_equal(varlink_client_call(c, passing_on[i], NULL, 5000, &p, &err), 0);
                if (i == 0)
                        assert_null(err);
                else
                        assert_string_equal(err, "io.gpreempt.Test.Failed");
                assert_string_equal(json_object_get_string(json_object_object_get(p, "name")), "\\xff\\xfe");
                assert_true(json_object_object_get_ex(p, "list", &list));
                assert_string_equal(json_object_get_string(json_object_array_get_idx(list, 0)),
                                    "esc\033 caf\xc3\xa9");
                assert_string_equal(json_object_get_string(json_object_array_get_idx(list, 1)), "cut \\xe2\\x82");
                assert_string_equal(json_object_get_string(json_object_object_get(p, "surrogate")),
                                    "\\xed\\xa0\\x80");
                json_object_put(p);
                free(err);
        }
        varlink_client_free(c);
}

static long long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A server whose loop is stuck accepts nothing, and once its queue of
 * pending connections is full, connect() waits for room: the client gives
 * up at its timeout rather than wait forever. The server here is a socket
 * that listens with a queue of one and never accepts.
 */
static void test_connect_to_a_stuck_server(void **state)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct varlink_client *c;
        int listener, queued[8];
        long long waited;
        size_t n = 0;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "/tmp/gpreempt-varlink-test-%d-stuck.sock", (int)getpid());
        listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(listener >= 0);
        assert_int_equal(bind(listener, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(listen(listener, 0), 0);
        /* fill the queue: a connect() that would have to wait fails with EAGAIN here */
        for (; n < sizeof(queued) / sizeof(queued[0]); n++) {
                queued[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                assert_true(queued[n] >= 0);
                if (connect(queued[n], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                        assert_int_equal(errno, EAGAIN);
                        close(queued[n]);
                        break;
                }
        }
        assert_true(n < sizeof(queued) / sizeof(queued[0]));

        waited = now_ms();
        assert_int_equal(varlink_client_connect(sa.sun_path, 300, &c), -ETIMEDOUT);
        waited = now_ms() - waited;
        assert_true(waited >= 250 && waited < 5000);
        for (size_t i = 0; i < n; i++)
                close(queued[i]);
        close(listener);
        unlink(sa.sun_path);
}

static void test_garbage_gets_errors_and_connection_survives(void **state)
{
        static const char *const garbage[] = {
                "", "xyz", "{", "[1]", "1", "\"s\"", "{}", "{\"method\":5}", "{\"method\":null}",
                "{\"method\":\"io.gpreempt.Test.Echo\",\"parameters\":[]}",
                "{\"method\":\"io.gpreempt.Test.Echo\",\"oneway\":\"yes\"}",
                "{\"method\":\"io.gpreempt.Test.Echo\",\"upgrade\":true}",
                "{\"method\":\"io.gpreempt.Test.Echo\"} trailing", "{'method':'x'}",
                "{\"method\":\"io.gpreempt.Test.Echo\"}{\"method\":\"x\"}", "\xff\xfe\x80",
                /* invalid UTF-8 inside strings: an error reply echoing it would not be JSON */
                "{\"method\":\"io.gpreempt.Test.\xff\xfe\"}",
                "{\"method\":\"io.gpreempt.\xc3\x28.Echo\"}",
                "{\"method\":\"io.gpreempt.Test.Echo\",\"parameters\":{\"\xed\xa0\x80\":1}}", /* a surrogate */
                "{\"method\":\"io.gpreempt.Test.\xc0\xaf\"}",                                    /* overlong '/' */
                "{\"method\":\"io.gpreempt.Test.\xf4\x90\x80\x80\"}",                           /* above U+10FFFF */
                "{\"method\":\"io.gpreempt.Test.Echo\\u0000x\"}", /* not Echo: the name goes on after the NUL */
        };
        int fd = raw_connect();

        for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++)
                call_expect(fd, garbage[i], VARLINK_ERROR_INVALID_PARAMETER);
        call_expect(fd, "{\"method\":\"io.gpreempt.Test.Echo\"}", "");
        close(fd);
}

static void test_deep_nesting(void **state)
{
        size_t depth = 100000;
        char *msg = malloc(2 * depth + 64);
        int fd = raw_connect();

        strcpy(msg, "{\"method\":\"io.gpreempt.Test.Echo\",\"parameters\":{\"a\":");
        size_t len = strlen(msg);
        memset(msg + len, '[', depth / 4);
        memset(msg + len + depth / 4, ']', depth / 4);
        strcpy(msg + len + depth / 2, "}}");
        call_expect(fd, msg, VARLINK_ERROR_INVALID_PARAMETER);
        free(msg);
        close(fd);
}

static void test_message_without_nul_is_cut_off(void **state)
{
        size_t len = VARLINK_MESSAGE_MAX + 4096;
        char *junk = malloc(len);
        int fd = raw_connect();
        const char *got;

        memset(junk, 'a', len);
        raw_send(fd, junk, len);
        got = raw_reply(fd, 5000);
        assert_non_null(got);
        assert_string_equal(got, VARLINK_ERROR_INVALID_PARAMETER);
        assert_null(raw_reply(fd, 5000)); /* and then the server hangs up */
        free(junk);
        close(fd);
}

static void test_slow_partial_message_is_dropped(void **state)
{
        int fd = raw_connect();

        raw_send(fd, "{\"meth", 6);
        /* the partial-message limit is 2 s; the reply must be a hang-up, not a wait forever */
        assert_null(raw_reply(fd, 5000));
        close(fd);
}

static void test_connection_limit(void **state)
{
        static const char echo[] = "{\"method\":\"io.gpreempt.Test.Echo\"}";
        int fds[VARLINK_SERVER_CONNECTIONS_MAX + 1];
        struct json_object *refusal, *p, *scope;
        int extra;

        for (int i = 0; i < VARLINK_SERVER_CONNECTIONS_MAX; i++) {
                fds[i] = raw_connect();
                call_expect(fds[i], echo, "");
        }
        /* one more is told why it is refused (root has no share of its own: every connection is taken), then
         * hung up on */
        extra = raw_connect();
        raw_send(extra, echo, sizeof(echo));
        refusal = raw_message(extra, 5000);
        assert_non_null(refusal);
        assert_string_equal(json_object_get_string(json_object_object_get(refusal, "error")),
                            "io.gpreempt.Test.TooManyConnections");
        assert_true(json_object_object_get_ex(refusal, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "scope", &scope));
        assert_string_equal(json_object_get_string(scope), "all");
        assert_int_equal(json_object_get_int(json_object_object_get(p, "limit")), VARLINK_SERVER_CONNECTIONS_MAX);
        json_object_put(refusal);
        assert_null(raw_reply(extra, 5000));
        close(extra);
        for (int i = 0; i < VARLINK_SERVER_CONNECTIONS_MAX; i++)
                close(fds[i]);
        /* The slots come back once the server has seen the hang-ups. It may
         * accept the next client before it has seen all of them, and then
         * rightly drops it at the limit: ask again, within a bound. */
        for (int attempt = 0;; attempt++) {
                const char *got;

                fds[0] = raw_connect();
                raw_send(fds[0], echo, sizeof(echo));
                got = raw_reply(fds[0], 5000);
                close(fds[0]);
                if (got) {
                        assert_string_equal(got, "");
                        break;
                }
                if (attempt >= 50)
                        fail_msg("the server never accepted a client again after the others left");
                usleep(100000);
        }
}

static void test_client_that_never_reads(void **state)
{
        static const char call[] = "{\"method\":\"org.varlink.service.GetInfo\"}";
        int fd = raw_connect(), other;
        struct pollfd pfd = { .events = POLLOUT };

        pfd.fd = fd;
        /* write until the kernel refuses more: the server must stop reading, not buffer forever */
        for (int i = 0; i < 200000 && poll(&pfd, 1, 200) == 1; i++) {
                if (send(fd, call, sizeof(call), MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
                        break;
        }
        other = raw_connect();
        call_expect(other, "{\"method\":\"io.gpreempt.Test.Echo\"}", "");
        close(other);
        close(fd);
}

/* Runs fn in a child with the given credentials, so SO_PEERCRED sees them. */
static void as_user(gid_t gid, uid_t uid, const char *method, const char *error)
{
        pid_t pid = fork();
        int status;

        assert_true(pid >= 0);
        if (pid == 0) {
                int fd;
                const char *got;
                char msg[128];

                if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
                        _exit(2);
                fd = raw_connect();
                snprintf(msg, sizeof(msg), "{\"method\":\"%s\"}", method);
                raw_send(fd, msg, strlen(msg) + 1);
                got = raw_reply(fd, 5000);
                _exit(got && strcmp(got, error) == 0 ? 0 : 1);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_authorisation(void **state)
{
        as_user(NOBODY, NOBODY, "io.gpreempt.Test.Echo", "io.gpreempt.Test.PermissionDenied");
        as_user(NOBODY, NOBODY, "io.gpreempt.Test.Change", "io.gpreempt.Test.PermissionDenied");
        as_user(NOBODY, NOBODY, "org.varlink.service.GetInfo", "");
        as_user(READ_GID, NOBODY, "io.gpreempt.Test.Echo", "");
        as_user(READ_GID, NOBODY, "io.gpreempt.Test.Change", "io.gpreempt.Test.PermissionDenied");
        as_user(0, 0, "io.gpreempt.Test.Change", "");
}

/* Connections one user holds, from a child running as that user, until released. */
struct holder {
        pid_t pid;
        int report_fd;  /* the child writes a struct held there */
        int release_fd; /* a byte written there lets the child exit */
};

/* What a holder got: how many connections, and the refusal of the one after. */
struct held {
        int connections;
        bool told;      /* refused with TooManyConnections */
        int limit;      /* its parameters */
        char scope[16];
};

static void hold_connections(struct holder *h, gid_t gid, uid_t uid, int tries)
{
        static const char get_info[] = "{\"method\":\"org.varlink.service.GetInfo\"}";
        int report[2], release[2];

        assert_int_equal(pipe(report), 0);
        assert_int_equal(pipe(release), 0);
        h->pid = fork();
        assert_true(h->pid >= 0);
        if (h->pid == 0) {
                struct held held = { 0 };
                char c;

                close(report[0]);
                close(release[1]);
                if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
                        _exit(2);
                for (int i = 0; i < tries; i++) {
                        int fd = raw_connect();
                        struct json_object *reply, *error, *p;

                        raw_send(fd, get_info, sizeof(get_info));
                        reply = raw_message(fd, 5000);
                        if (reply && !json_object_object_get_ex(reply, "error", &error)) {
                                held.connections++; /* kept open */
                                json_object_put(reply);
                                continue;
                        }
                        if (reply && json_object_object_get_ex(reply, "parameters", &p) &&
                            strcmp(json_object_get_string(error), "io.gpreempt.Test.TooManyConnections") == 0) {
                                held.told = true;
                                held.limit = json_object_get_int(json_object_object_get(p, "limit"));
                                snprintf(held.scope, sizeof(held.scope), "%s",
                                         json_object_get_string(json_object_object_get(p, "scope")));
                        }
                        json_object_put(reply);
                        close(fd);
                        break;
                }
                if (write(report[1], &held, sizeof(held)) != sizeof(held))
                        _exit(3);
                (void)!read(release[0], &c, 1);
                _exit(0);
        }
        close(report[1]);
        close(release[0]);
        h->report_fd = report[0];
        h->release_fd = release[1];
}

/* What the holder got, once it has its connections. */
static struct held held_connections(struct holder *h)
{
        struct held held;

        assert_int_equal(read(h->report_fd, &held, sizeof(held)), (ssize_t)sizeof(held));
        return held;
}

static void release_connections(struct holder *h)
{
        int status;

        /* a byte, not the pipe's end: the holders forked later hold copies of this one's */
        assert_int_equal(write(h->release_fd, "x", 1), 1);
        close(h->release_fd);
        close(h->report_fd);
        assert_int_equal(waitpid(h->pid, &status, 0), h->pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * One local user cannot lock root or the read group out of the socket:
 * each user holds at most its budget, and users who may not read share
 * all but the reserved slots. A connection over budget is told why: which
 * budget, and how large it is.
 */
static void test_one_user_cannot_lock_others_out(void **state)
{
        enum { USERS = 7, FIRST_UID = 60100 };
        struct holder one, many[USERS];
        struct held held;
        int fd, total = 0;

        hold_connections(&one, NOBODY, NOBODY, VARLINK_SERVER_CONNECTIONS_MAX);
        held = held_connections(&one);
        assert_int_equal(held.connections, VARLINK_SERVER_CONNECTIONS_PER_UID);
        assert_true(held.told);
        assert_string_equal(held.scope, "user");
        assert_int_equal(held.limit, VARLINK_SERVER_CONNECTIONS_PER_UID);
        fd = raw_connect();
        call_expect(fd, "{\"method\":\"io.gpreempt.Test.Echo\"}", "");
        close(fd);
        as_user(READ_GID, FIRST_UID - 1, "io.gpreempt.Test.Echo", "");
        release_connections(&one);

        for (int i = 0; i < USERS; i++) {
                hold_connections(&many[i], FIRST_UID + i, FIRST_UID + i, VARLINK_SERVER_CONNECTIONS_PER_UID);
                held = held_connections(&many[i]);
                total += held.connections;
        }
        assert_int_equal(total, VARLINK_SERVER_CONNECTIONS_MAX - VARLINK_SERVER_CONNECTIONS_RESERVED);
        /* the last user, within its own budget, was refused for the shared one */
        assert_true(held.told);
        assert_string_equal(held.scope, "unprivileged");
        assert_int_equal(held.limit, VARLINK_SERVER_CONNECTIONS_MAX - VARLINK_SERVER_CONNECTIONS_RESERVED);
        fd = raw_connect();
        call_expect(fd, "{\"method\":\"io.gpreempt.Test.Echo\"}", "");
        close(fd);
        as_user(READ_GID, FIRST_UID - 1, "io.gpreempt.Test.Echo", "");
        for (int i = 0; i < USERS; i++)
                release_connections(&many[i]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_buffer),
                cmocka_unit_test(test_introspection),
                cmocka_unit_test(test_dispatch_and_errors),
                cmocka_unit_test(test_pipelined_calls),
                cmocka_unit_test(test_deferred_call),
                cmocka_unit_test(test_pipelined_oneway_calls_take_a_turn_each),
                cmocka_unit_test(test_replies_are_utf8),
                cmocka_unit_test(test_connect_to_a_stuck_server),
                cmocka_unit_test(test_garbage_gets_errors_and_connection_survives),
                cmocka_unit_test(test_deep_nesting),
                cmocka_unit_test(test_message_without_nul_is_cut_off),
                cmocka_unit_test(test_slow_partial_message_is_dropped),
                cmocka_unit_test(test_connection_limit),
                cmocka_unit_test(test_client_that_never_reads),
                cmocka_unit_test(test_authorisation),
                /* last: the server sees the holders' hang-ups only some time after */
                cmocka_unit_test(test_one_user_cannot_lock_others_out),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
