/* SPDX-License-Identifier: MIT */
/*
 * KFD SMI events (kfd_chardev.c: kfd_ioctl_smi_events; kfd_smi_events.c):
 * AMDKFD_IOC_SMI_EVENTS gives the caller a new fd watching one GPU; the u64
 * last written to it chooses the events (KFD_SMI_EVENT_MASK_FROM_INDEX),
 * and a read returns their text records. kfdemu's fd is a stream socket
 * (transport/ makes the pair, the preload plays the fd's read and write);
 * the kernel's end is here. kfd-interface.md §16.8.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kfd-priv.h"

/* kfd_smi_events.c: the client's kfifo, and the longest record. */
#define KFD_SMI_FIFO_SIZE 1024u
#define KFD_SMI_MSG_SIZE 96u

struct kfd_smi_client {
        struct kfd_smi_client *next;
        int fd;                          /* the kernel's end: masks in, records out */
        int user_end;                    /* a copy of the caller's end, to see how much is unread */
        uint64_t events;                 /* the last mask written */
        uint8_t partial[sizeof(uint64_t)]; /* a mask not yet fully received */
        size_t n_partial;
};

static void kfd_smi_client_free(struct kfd_smi_client *client)
{
        close(client->fd);
        close(client->user_end);
        free(client);
}

long kfd_ioctl_smi_events(struct emu_call *call, struct emu_process *p, void *data)
{
        struct kfd_ioctl_smi_events_args *args = data;
        struct emu_pdd *pdd = kfd_process_device_by_id(p, args->gpuid);
        struct kfd_smi_client *client;
        int user_end, r;

        if (!pdd)
                return -EINVAL;
        client = calloc(1, sizeof(*client));
        if (!client)
                return -ENOMEM;
        r = emu_transport_smi_socket(p->node, &client->fd, &user_end);
        if (r < 0) {
                free(client);
                return r;
        }
        /* The kernel keeps the fd's file; kfdemu keeps a copy of the
         * caller's end for the fifo's fill level (SIOCINQ). */
        client->user_end = fcntl(user_end, F_DUPFD_CLOEXEC, 0);
        if (client->user_end < 0) {
                r = -errno;
                close(user_end);
                close(client->fd);
                free(client);
                return r;
        }
        client->next = pdd->gpu->smi_clients;
        pdd->gpu->smi_clients = client;
        /* anon_inode_getfd's number in the caller's table: the preload
         * writes it (protocol.h, kfdemu_reply.fd_arg_offset). */
        call->reply_fd = user_end;
        call->reply_fd_arg_offset = 1 + offsetof(struct kfd_ioctl_smi_events_args, anon_fd);
        return 0;
}

/* kfd_smi_ev_write: the last complete u64 written is the mask. */
static void kfd_smi_read_masks(struct kfd_smi_client *client)
{
        uint8_t buf[256];
        ssize_t n;

        while ((n = recv(client->fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
                for (ssize_t i = 0; i < n; i++) {
                        client->partial[client->n_partial++] = buf[i];
                        if (client->n_partial == sizeof(client->partial)) {
                                memcpy(&client->events, client->partial, sizeof(client->events));
                                client->n_partial = 0;
                        }
                }
        }
}

/* add_event_to_kfifo: to every client of the GPU that asked for `event`,
 * if its fifo has room; otherwise the record is dropped. A client whose
 * fd the caller closed stays until the node ends (the copy of its end
 * keeps the socket open), getting records nobody reads. */
static void kfd_smi_add_event(struct emu_gpu *gpu, unsigned event, const char *msg, size_t len)
{
        for (struct kfd_smi_client *client = gpu->smi_clients; client; client = client->next) {
                int unread = 0;

                kfd_smi_read_masks(client);
                if (!(client->events & KFD_SMI_EVENT_MASK_FROM_INDEX(event)))
                        continue;
                if (ioctl(client->user_end, FIONREAD, &unread) < 0 || (size_t)unread + len > KFD_SMI_FIFO_SIZE) {
                        kfd_log(gpu->node, "smi_event(EventID: %u): no space left", event);
                        continue;
                }
                (void)send(client->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
}

void kfd_smi_event_gpu_reset(struct emu_gpu *gpu, bool post_reset)
{
        unsigned event = post_reset ? KFD_SMI_EVENT_GPU_POST_RESET : KFD_SMI_EVENT_GPU_PRE_RESET;
        char msg[KFD_SMI_MSG_SIZE];
        int len;

        /* kfd_smi_event_update_gpu_reset: the sequence number counts the
         * resets, raised before the pre-reset record. */
        if (!post_reset)
                gpu->reset_seq_num++;
        len = snprintf(msg, sizeof(msg), "%x %x\n", event, gpu->reset_seq_num);
        kfd_smi_add_event(gpu, event, msg, (size_t)len);
}

void kfd_smi_clients_free(struct emu_gpu *gpu)
{
        while (gpu->smi_clients) {
                struct kfd_smi_client *client = gpu->smi_clients;

                gpu->smi_clients = client->next;
                kfd_smi_client_free(client);
        }
}
