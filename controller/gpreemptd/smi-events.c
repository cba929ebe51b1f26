/* SPDX-License-Identifier: MIT */
#include "smi-events.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cleanup.h"
#include "kfd-abi.h"
#include "printable.h"

#ifndef AMDKFD_IOC_SMI_EVENTS
/* include/uapi/linux/kfd_ioctl.h, KFD 1.3 (Linux 5.9) */
struct kfd_ioctl_smi_events_args {
        uint32_t gpuid;   /* to KFD */
        uint32_t anon_fd; /* from KFD */
};
#define AMDKFD_IOC_SMI_EVENTS AMDKFD_IOWR(0x1F, struct kfd_ioctl_smi_events_args)
#endif

/* More than a current kernel's FIFO (8 KiB) holds: one read empties it. */
#define READ_BUFFER 8192

struct smi_events {
        sd_event_source *source;
        int fd;
        uint32_t gpu_id;
        struct smi_events_callbacks cb;
        void *userdata;
        struct smi_stream stream;
};

int smi_events_set_mask(int event_fd, uint64_t mask)
{
        ssize_t n = write(event_fd, &mask, sizeof(mask));

        if (n < 0)
                return NEG_ERRNO();
        return n == sizeof(mask) ? 0 : -EIO;
}

int smi_events_subscribe(int kfd_fd, uint32_t gpu_id, uint64_t mask)
{
        struct kfd_ioctl_smi_events_args args = { .gpuid = gpu_id };
        _cleanup_close_ int fd = -1;
        int r;

        do
                r = ioctl(kfd_fd, AMDKFD_IOC_SMI_EVENTS, &args);
        while (r < 0 && errno == EINTR);
        if (r < 0)
                return NEG_ERRNO();
        fd = (int)args.anon_fd;
        r = smi_events_set_mask(fd, mask);
        if (r < 0)
                return r;
        return TAKE_FD(fd);
}

const char *smi_events_strerror(int error)
{
        switch (error) {
        case -EINVAL:
                return "the kernel does not know this GPU id for this process (a GPU its device cgroup denies: "
                       "allow the GPU's render node, DeviceAllow=char-drm in the unit; one removed; one that "
                       "appeared after /dev/kfd was opened; or a kernel before 5.9, without SMI events)";
        case -EMFILE:
        case -ENFILE:
                return "no file descriptor left for the event fd (raise LimitNOFILE=)";
        default:
                return strerror(-error);
        }
}

static void on_record(const struct smi_record *r, void *userdata)
{
        struct smi_events *s = userdata;
        char text[PRINTABLE_SIZE(SMI_RESET_CAUSE_MAX > SMI_TASK_NAME_MAX ? SMI_RESET_CAUSE_MAX : SMI_TASK_NAME_MAX)];

        switch (r->event) {
        case SMI_EVENT_GPU_PRE_RESET:
        case SMI_EVENT_GPU_POST_RESET:
                if (!s->cb.gpu_reset)
                        return;
                printable_escape(text, r->reset_cause, strlen(r->reset_cause));
                s->cb.gpu_reset(s->gpu_id, r->event == SMI_EVENT_GPU_POST_RESET, r->reset_seq, text, s->userdata);
                return;
        case SMI_EVENT_QUEUE_EVICTION:
                if (s->cb.queue_eviction)
                        s->cb.queue_eviction(r->gpu_id, r->pid, r->trigger, s->userdata);
                return;
        case SMI_EVENT_QUEUE_RESTORE:
                if (s->cb.queue_restore)
                        s->cb.queue_restore(r->gpu_id, r->pid, r->rescheduled, s->userdata);
                return;
        case SMI_EVENT_VMFAULT:
                if (!s->cb.vm_fault)
                        return;
                printable_escape(text, r->task_name, strlen(r->task_name));
                s->cb.vm_fault(s->gpu_id, r->pid, text, s->userdata);
                return;
        default:
                return; /* an event the mask may ask for but the daemon does not act on */
        }
}

static void on_bad_record(const char *why, const char *line, size_t len, void *userdata)
{
        struct smi_events *s = userdata;
        char text[PRINTABLE_SIZE(SMI_RECORD_MAX)];

        if (!s->cb.bad_record)
                return;
        printable_escape(text, line, len);
        s->cb.bad_record(s->gpu_id, why, text, s->userdata);
}

static const struct smi_stream_callbacks stream_callbacks = {
        .record = on_record,
        .bad_record = on_bad_record,
};

static void end(struct smi_events *s, int error)
{
        sd_event_source_set_enabled(s->source, SD_EVENT_OFF);
        if (s->cb.ended)
                s->cb.ended(s->gpu_id, error, s->userdata);
}

static int on_readable(sd_event_source *source, int fd, uint32_t revents, void *userdata)
{
        struct smi_events *s = userdata;
        char buf[READ_BUFFER];

        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));

                if (n < 0 && errno == EINTR)
                        continue;
                /* kfd_smi_ev_read() says EAGAIN for an empty FIFO */
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0) {
                        end(s, NEG_ERRNO());
                        return 0;
                }
                if (n == 0) {
                        end(s, 0);
                        return 0;
                }
                smi_stream_feed(&s->stream, buf, (size_t)n, &stream_callbacks, s);
                if ((size_t)n < sizeof(buf))
                        break;
        }
        if (revents & (EPOLLHUP | EPOLLERR))
                end(s, 0);
        return 0;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct smi_events *, smi_events_free);

int smi_events_new(sd_event *e, int64_t priority, int event_fd, uint32_t gpu_id,
                   const struct smi_events_callbacks *cb, void *userdata, struct smi_events **ret)
{
        _cleanup_(smi_events_freep) struct smi_events *s = calloc(1, sizeof(*s));
        int r;

        if (!s) {
                close(event_fd);
                return -ENOMEM;
        }
        s->fd = event_fd;
        /* the kernel's fd never blocks a read (EAGAIN when empty); make any other fd behave the same */
        if (fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK) < 0)
                return NEG_ERRNO();
        s->gpu_id = gpu_id;
        s->cb = *cb;
        s->userdata = userdata;
        r = sd_event_add_io(e, &s->source, s->fd, EPOLLIN, on_readable, s);
        if (r < 0)
                return r;
        r = sd_event_source_set_priority(s->source, priority);
        if (r < 0)
                return r;
        (void)sd_event_source_set_description(s->source, "smi-events");
        *ret = TAKE_PTR(s);
        return 0;
}

struct smi_events *smi_events_free(struct smi_events *s)
{
        if (!s)
                return NULL;
        sd_event_source_disable_unref(s->source);
        closep(&s->fd);
        free(s);
        return NULL;
}
