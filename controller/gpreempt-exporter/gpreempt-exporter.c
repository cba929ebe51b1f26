/* SPDX-License-Identifier: MIT */
/*
 * gpreempt-exporter: gpreemptd's metrics for Prometheus. gpreemptd has no
 * network (PrivateNetwork=yes); this program asks it over its Varlink
 * socket (io.gpreempt.Metrics) and either serves the answer at /metrics
 * over HTTP (libmicrohttpd; socket-activated by gpreempt-exporter.socket,
 * or on --listen) or writes it once to a file for node_exporter's textfile
 * collector, replaced by an atomic rename.
 *
 * When the daemon does not answer, the output is gpreempt_up 0 with
 * HTTP 200, not an error status: Prometheus then keeps a series that says
 * the daemon is down (alertable), where a 503 would only set the scrape's
 * own `up` to 0, the same as an unreachable exporter.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <json.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "api-names.h"
#include "cleanup.h"
#include "metrics-exposition.h"
#include "paths.h"
#include "printable.h"
#include "varlink-client.h"

/* Not in the Prometheus wiki's 9100-9999 range, which is allocated in full (docs/metrics.md). */
#define EXPORTER_DEFAULT_PORT 10179
/*
 * The daemon answers from its loop, which an in-flight suspend can hold for
 * milliseconds; this bounds connecting and the call together. A scrape that
 * says how long Prometheus waits (X-Prometheus-Scrape-Timeout-Seconds) gets
 * EXPORTER_SCRAPE_SHARE_PERCENT of that when it is less, so that
 * gpreempt_up 0 arrives before Prometheus gives up on the scrape.
 */
#define EXPORTER_CALL_TIMEOUT_MS 5000
#define EXPORTER_SCRAPE_SHARE_PERCENT 80
#define EXPORTER_MIN_CALL_TIMEOUT_MS 50
#define EXPORTER_SCRAPE_TIMEOUT_HEADER "X-Prometheus-Scrape-Timeout-Seconds"
/* Scrapers are few; more connections than this wait. */
#define EXPORTER_MAX_CONNECTIONS 16
#define EXPORTER_CONNECTION_TIMEOUT_S 10

enum exporter_exit {
        EXPORTER_EXIT_OK = 0,
        EXPORTER_EXIT_FAILURE = 1,
        EXPORTER_EXIT_USAGE = 2,
        EXPORTER_EXIT_NO_DAEMON = 3, /* --textfile: written, with gpreempt_up 0 */
};

DEFINE_TRIVIAL_CLEANUP_FUNC(struct varlink_client *, varlink_client_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct json_object *, json_object_put);

struct options {
        struct sockaddr_in listen;
        const char *textfile;
        bool per_process;
};

static void print_help(void)
{
        printf("Usage: gpreempt-exporter [--listen ADDRESS:PORT] [--per-process]\n"
               "       gpreempt-exporter --textfile FILE.prom [--per-process]\n"
               "\n"
               "Serve gpreemptd's metrics for Prometheus at http://ADDRESS:PORT/metrics, asking\n"
               "the daemon over its control socket at every scrape; or write them once to\n"
               "FILE.prom for node_exporter's textfile collector (replaced atomically).\n"
               "Started by gpreempt-exporter.socket, it serves the socket systemd passes.\n"
               "When gpreemptd does not answer, the metrics are gpreempt_up 0 (and the reason\n"
               "on stderr). Needs root or the gpreempt group.\n"
               "\n"
               "  --listen ADDRESS:PORT  where to listen without systemd (default 127.0.0.1:%d)\n"
               "  --textfile FILE        write the metrics to FILE once and exit\n"
               "  --per-process          one series per process, with a pid label, instead of\n"
               "                         per workload (a series per process: mind the cardinality)\n"
               "  -h, --help             show this help\n"
               "  --version              show the version\n"
               "\n"
               "Exit status: 0 done; 1 failure; 2 usage; 3 (--textfile) gpreemptd did not answer.\n",
               EXPORTER_DEFAULT_PORT);
}

/* IPv4 ADDRESS:PORT; the exporter is meant for loopback or one interface's address. */
static int parse_listen(const char *arg, struct sockaddr_in *ret)
{
        _cleanup_free_ char *copy = strdup(arg);
        char *colon, *end;
        unsigned long port;
        struct sockaddr_in sa = { .sin_family = AF_INET };

        if (!copy)
                return -ENOMEM;
        colon = strrchr(copy, ':');
        if (!colon)
                return -EINVAL;
        *colon = '\0';
        errno = 0;
        port = strtoul(colon + 1, &end, 10);
        if (errno || *end || end == colon + 1 || port == 0 || port > 65535)
                return -EINVAL;
        if (inet_pton(AF_INET, copy, &sa.sin_addr) != 1)
                return -EINVAL;
        sa.sin_port = htons((uint16_t)port);
        *ret = sa;
        return 0;
}

/* What the daemon's failure to answer means to the operator, in one sentence (malloc'd). */
static char *explain_no_answer(const char *socket_path, int error, const char *varlink_error)
{
        char *s = NULL;
        int r;

        if (varlink_error && strcmp(varlink_error, API_QUALIFIED("PermissionDenied")) == 0)
                r = asprintf(&s, "gpreemptd refused to tell its metrics: run gpreempt-exporter as root or in the "
                                 "gpreempt group");
        else if (varlink_error)
                r = asprintf(&s, "gpreemptd answered Metrics with %s: is it an older gpreemptd? Restart it after "
                                 "upgrading", varlink_error);
        else if (error == -ENOENT || error == -ECONNREFUSED)
                r = asprintf(&s, "gpreemptd is not running (nothing listens on %s): start it with 'systemctl start "
                                 "gpreemptd', or set GPREEMPT_RUNTIME_DIR to its runtime directory", socket_path);
        else if (error == -EBADMSG)
                r = asprintf(&s, "gpreemptd's answer on %s is not a Varlink message or larger than one may be "
                                 "(256 KiB): with --per-process on a node of many processes, leave that option out",
                             socket_path);
        else if (error == -EACCES)
                r = asprintf(&s, "may not connect to %s: run gpreempt-exporter as root or in the gpreempt group",
                             socket_path);
        else if (error == -ETIMEDOUT)
                r = asprintf(&s, "gpreemptd did not answer on %s in time: is its loop stuck? 'gpreemptctl status' "
                                 "and its log may tell", socket_path);
        else
                r = asprintf(&s, "gpreemptd did not answer on %s: %s", socket_path, strerror(-error));
        return r < 0 ? NULL : s;
}

static int64_t monotonic_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Asks gpreemptd for its families within timeout_ms. Returns 0, or -errno with the reason in *ret_why. */
static int ask_daemon(bool per_process, int timeout_ms, struct json_object **ret_families, char **ret_why)
{
        _cleanup_(varlink_client_freep) struct varlink_client *c = NULL;
        _cleanup_(json_object_putp) struct json_object *params = json_object_new_object(), *reply = NULL;
        _cleanup_free_ char *path = NULL, *error = NULL;
        struct json_object *families;
        int64_t deadline_ms = monotonic_ms() + timeout_ms;
        int r;

        r = paths_api_socket(&path);
        if (r < 0)
                return r;
        r = varlink_client_connect(path, timeout_ms, &c);
        if (r >= 0) {
                int64_t left_ms = deadline_ms - monotonic_ms();

                json_object_object_add(params, "per_process", json_object_new_boolean(per_process));
                r = left_ms <= 0 ? -ETIMEDOUT
                                 : varlink_client_call(c, API_QUALIFIED("Metrics"), params, (int)left_ms, &reply,
                                                       &error);
        }
        if (r < 0 || error) {
                *ret_why = explain_no_answer(path, r < 0 ? r : -EPROTO, error);
                return r < 0 ? r : -EPROTO;
        }
        /* collect() appends its own family to the list, and json-c aborts the program when that is not an
         * array: a reply of another shape is refused here, as one without families is */
        if (!json_object_object_get_ex(reply, "families", &families) ||
            !json_object_is_type(families, json_type_array)) {
                *ret_why = strdup("gpreemptd's Metrics reply has no list of families: is it an older or newer "
                                  "gpreemptd? Restart it after upgrading");
                return -EBADMSG;
        }
        *ret_families = json_object_get(families);
        return 0;
}

/* The exporter's own family: whether the daemon answered. */
static struct json_object *up_family(bool up)
{
        struct json_object *f = json_object_new_object(), *samples = json_object_new_array(),
                           *s = json_object_new_object();

        json_object_object_add(f, "name", json_object_new_string("gpreempt_up"));
        json_object_object_add(f, "type", json_object_new_string("gauge"));
        json_object_object_add(f, "help", json_object_new_string("1 when gpreemptd answered this scrape, 0 when not "
                                                                 "(the exporter's log says why)."));
        json_object_object_add(s, "labels", json_object_new_object());
        json_object_object_add(s, "value", json_object_new_int(up));
        json_object_array_add(samples, s);
        json_object_object_add(f, "samples", samples);
        return f;
}

/*
 * The metrics as text (malloc'd, *ret_size bytes). Returns 1 when the
 * daemon answered, 0 when not (the text is then gpreempt_up 0 alone and
 * the reason was printed), -ENOMEM.
 */
static int collect(bool per_process, int timeout_ms, char **ret_text, size_t *ret_size)
{
        _cleanup_(json_object_putp) struct json_object *families = NULL;
        _cleanup_free_ char *why = NULL, *text = NULL;
        const char *problem = NULL;
        size_t size = 0;
        FILE *out;
        int r = ask_daemon(per_process, timeout_ms, &families, &why);

        if (r < 0 && r != -ENOMEM)
                families = json_object_new_array();
        else if (r < 0)
                return r;
        json_object_array_add(families, up_family(r >= 0));
        out = open_memstream(&text, &size);
        if (!out)
                return -ENOMEM;
        r = metrics_exposition_write(out, families, &problem);
        if (r == -EBADMSG) {
                /* a daemon that speaks the protocol wrongly is a daemon that did not answer */
                free(why);
                if (asprintf(&why, "gpreemptd's metrics cannot be written out: %s", problem) < 0)
                        why = NULL;
                rewind(out);
                json_object_put(families);
                families = json_object_new_array();
                json_object_array_add(families, up_family(false));
                r = metrics_exposition_write(out, families, NULL);
        }
        if (fclose(out) != 0 || r < 0)
                return -ENOMEM;
        if (why) {
                _cleanup_free_ char *printable = printable_dup(why);

                fprintf(stderr, "gpreempt-exporter: %s\n", printable ? printable : why);
        }
        *ret_size = size;
        *ret_text = TAKE_PTR(text);
        return why ? 0 : 1;
}

/* Takes text. allow: the Allow header's value, which a 405 must carry (RFC 9110 §15.5.6); NULL for none. */
static enum MHD_Result reply_text(struct MHD_Connection *connection, unsigned status, char *text, size_t size,
                                  const char *content_type, const char *allow)
{
        struct MHD_Response *response = MHD_create_response_from_buffer(size, text, MHD_RESPMEM_MUST_FREE);
        enum MHD_Result r;

        if (!response) {
                free(text);
                return MHD_NO;
        }
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        if (allow)
                MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, allow);
        r = MHD_queue_response(connection, status, response);
        MHD_destroy_response(response);
        return r;
}

static enum MHD_Result reply_message(struct MHD_Connection *connection, unsigned status, const char *message,
                                     const char *allow)
{
        char *text = strdup(message);

        return text ? reply_text(connection, status, text, strlen(text), "text/plain; charset=utf-8", allow) : MHD_NO;
}

/* How long the daemon may take to answer this scrape: see EXPORTER_CALL_TIMEOUT_MS. */
static int scrape_call_timeout_ms(struct MHD_Connection *connection)
{
        const char *header = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, EXPORTER_SCRAPE_TIMEOUT_HEADER);
        double seconds, share_ms;
        char *end;

        if (!header)
                return EXPORTER_CALL_TIMEOUT_MS;
        errno = 0;
        seconds = strtod(header, &end);
        if (errno || end == header || *end || !(seconds > 0))
                return EXPORTER_CALL_TIMEOUT_MS; /* not Prometheus's: as without one */
        share_ms = seconds * 1000 * EXPORTER_SCRAPE_SHARE_PERCENT / 100;
        if (share_ms >= EXPORTER_CALL_TIMEOUT_MS)
                return EXPORTER_CALL_TIMEOUT_MS;
        return share_ms < EXPORTER_MIN_CALL_TIMEOUT_MS ? EXPORTER_MIN_CALL_TIMEOUT_MS : (int)share_ms;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **request_state)
{
        const struct options *o = cls;
        char *text = NULL;
        size_t size = 0;

        if (strcmp(url, "/metrics") != 0)
                return reply_message(connection, MHD_HTTP_NOT_FOUND, "gpreempt-exporter serves /metrics only.\n",
                                     NULL);
        if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
                return reply_message(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
                                     "/metrics is served to GET and HEAD only.\n", "GET, HEAD");
        if (collect(o->per_process, scrape_call_timeout_ms(connection), &text, &size) < 0)
                return reply_message(connection, MHD_HTTP_INTERNAL_SERVER_ERROR, "Out of memory.\n", NULL);
        return reply_text(connection, MHD_HTTP_OK, text, size, METRICS_EXPOSITION_CONTENT_TYPE, NULL);
}

static int serve(const struct options *o)
{
        struct MHD_Daemon *httpd;
        sigset_t stop;
        int n_fds = sd_listen_fds(true), sig;

        if (n_fds < 0 || n_fds > 1) {
                fprintf(stderr, "gpreempt-exporter: systemd passed %d sockets; the unit must pass one "
                                "(ListenStream= in gpreempt-exporter.socket)\n", n_fds < 0 ? 0 : n_fds);
                return EXPORTER_EXIT_FAILURE;
        }
        /* the signals are taken by sigwait below, not by the server's thread */
        sigemptyset(&stop);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGINT);
        sigprocmask(SIG_BLOCK, &stop, NULL);
        if (n_fds == 1)
                httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                         on_request, (void *)o, MHD_OPTION_LISTEN_SOCKET, SD_LISTEN_FDS_START,
                                         MHD_OPTION_CONNECTION_LIMIT, EXPORTER_MAX_CONNECTIONS,
                                         MHD_OPTION_CONNECTION_TIMEOUT, EXPORTER_CONNECTION_TIMEOUT_S, MHD_OPTION_END);
        else
                httpd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                         on_request, (void *)o, MHD_OPTION_SOCK_ADDR, &o->listen,
                                         MHD_OPTION_CONNECTION_LIMIT, EXPORTER_MAX_CONNECTIONS,
                                         MHD_OPTION_CONNECTION_TIMEOUT, EXPORTER_CONNECTION_TIMEOUT_S, MHD_OPTION_END);
        if (!httpd) {
                char address[INET_ADDRSTRLEN] = "";

                inet_ntop(AF_INET, &o->listen.sin_addr, address, sizeof(address));
                fprintf(stderr, "gpreempt-exporter: cannot listen on %s:%u: is the port taken (another exporter, or "
                                "gpreempt-exporter.socket)? Pick another with --listen\n",
                        n_fds == 1 ? "the socket systemd passed" : address, ntohs(o->listen.sin_port));
                return EXPORTER_EXIT_FAILURE;
        }
        sd_notify(false, "READY=1");
        while (sigwait(&stop, &sig) != 0)
                ;
        MHD_stop_daemon(httpd);
        return EXPORTER_EXIT_OK;
}

/*
 * Writes the metrics to path through a temporary file beside it, renamed
 * over it: node_exporter reads either the old file or the new, never a
 * part. The temporary name does not end in .prom, so it is never read.
 */
static int write_textfile(const struct options *o)
{
        _cleanup_free_ char *text = NULL, *tmp = NULL;
        size_t size = 0;
        int answered = collect(o->per_process, EXPORTER_CALL_TIMEOUT_MS, &text, &size), fd, r = 0;
        FILE *f;

        if (answered < 0 || asprintf(&tmp, "%s.XXXXXX", o->textfile) < 0) {
                fprintf(stderr, "gpreempt-exporter: out of memory\n");
                return EXPORTER_EXIT_FAILURE;
        }
        fd = mkstemp(tmp);
        if (fd < 0) {
                fprintf(stderr, "gpreempt-exporter: cannot create a file beside %s: %s (does its directory exist, "
                                "and may this user write there?)\n", o->textfile, strerror(errno));
                return EXPORTER_EXIT_FAILURE;
        }
        /* node_exporter runs as another user: the file is for everyone to read, as /metrics is */
        if (fchmod(fd, 0644) < 0 || !(f = fdopen(fd, "w")))
                r = -errno;
        else {
                if (fwrite(text, 1, size, f) != size || fflush(f) != 0 || fsync(fileno(f)) < 0)
                        r = -errno;
                if (fclose(f) != 0 && r == 0)
                        r = -errno;
                fd = -1;
        }
        if (fd >= 0)
                close(fd);
        if (r == 0 && rename(tmp, o->textfile) < 0)
                r = -errno;
        if (r < 0) {
                unlink(tmp);
                fprintf(stderr, "gpreempt-exporter: cannot write %s: %s\n", o->textfile, strerror(-r ? -r : EIO));
                return EXPORTER_EXIT_FAILURE;
        }
        return answered ? EXPORTER_EXIT_OK : EXPORTER_EXIT_NO_DAEMON;
}

int main(int argc, char **argv)
{
        enum { OPT_LISTEN = 0x100, OPT_TEXTFILE, OPT_PER_PROCESS, OPT_VERSION };
        static const struct option longopts[] = {
                { "listen", required_argument, NULL, OPT_LISTEN },
                { "textfile", required_argument, NULL, OPT_TEXTFILE },
                { "per-process", no_argument, NULL, OPT_PER_PROCESS },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                {},
        };
        struct options o = {
                .listen = { .sin_family = AF_INET, .sin_port = htons(EXPORTER_DEFAULT_PORT),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK) },
        };
        bool listen_given = false;
        int c;

        while ((c = getopt_long(argc, argv, "h", longopts, NULL)) >= 0)
                switch (c) {
                case OPT_LISTEN:
                        if (parse_listen(optarg, &o.listen) < 0) {
                                fprintf(stderr, "gpreempt-exporter: --listen wants an IPv4 ADDRESS:PORT such as "
                                                "127.0.0.1:%d, not '%s'\n", EXPORTER_DEFAULT_PORT, optarg);
                                return EXPORTER_EXIT_USAGE;
                        }
                        listen_given = true;
                        break;
                case OPT_TEXTFILE:
                        o.textfile = optarg;
                        break;
                case OPT_PER_PROCESS:
                        o.per_process = true;
                        break;
                case 'h':
                        print_help();
                        return EXPORTER_EXIT_OK;
                case OPT_VERSION:
                        printf("gpreempt-exporter %s\n", GPREEMPT_VERSION);
                        return EXPORTER_EXIT_OK;
                default:
                        fprintf(stderr, "Try 'gpreempt-exporter --help'.\n");
                        return EXPORTER_EXIT_USAGE;
                }
        if (optind < argc) {
                fprintf(stderr, "gpreempt-exporter: unexpected argument '%s'; try 'gpreempt-exporter --help'\n",
                        argv[optind]);
                return EXPORTER_EXIT_USAGE;
        }
        if (o.textfile && listen_given) {
                fprintf(stderr, "gpreempt-exporter: --textfile writes a file and exits; it does not listen, so "
                                "--listen has no place beside it\n");
                return EXPORTER_EXIT_USAGE;
        }
        return o.textfile ? write_textfile(&o) : serve(&o);
}
