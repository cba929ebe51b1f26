/* SPDX-License-Identifier: MIT */
/*
 * The sockets that stand in for the kernel's anonymous SMI event files
 * (kernel.h: emu_transport_smi_socket). The caller's end is accepted from
 * an abstract address named KFDEMU_SMI_SOCKET_PREFIX + server pid + number,
 * so that the preload can tell it from the application's own sockets by
 * getpeername alone, as it tells a kfd file by the server's path.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "protocol.h"
#include "server.h"

int emu_transport_smi_socket(struct emu_node *node, int *ret_kernel_end, int *ret_user_end)
{
        struct kfdemu_server *server = server_of(node);
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        _cleanup_close_ int listener = -1, user_end = -1, kernel_end = -1;
        socklen_t size;
        int n;

        /* sun_path[0] = '\0': abstract, gone with its last socket. */
        n = snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1, KFDEMU_SMI_SOCKET_PREFIX "%d/%u",
                     (int)getpid(), server->smi_sockets++);
        size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);

        listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (listener < 0 || bind(listener, (struct sockaddr *)&addr, size) < 0 || listen(listener, 1) < 0)
                return NEG_ERRNO();
        user_end = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (user_end < 0 || connect(user_end, (struct sockaddr *)&addr, size) < 0)
                return NEG_ERRNO();
        kernel_end = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (kernel_end < 0)
                return NEG_ERRNO();
        *ret_kernel_end = TAKE_FD(kernel_end);
        *ret_user_end = TAKE_FD(user_end);
        return 0;
}
