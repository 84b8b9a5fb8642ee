/*
 * A measurement, not part of the product: the least a WebSocket-to-PTY relay does per keystroke
 * without Node, for `BENCH_C_RELAY=1 npm run bench:bridge` (which compiles it with gcc and runs it
 * beside the minimal Node bridge). The same protocol and shell as bench/minimal-bridge.ts: each
 * masked text frame's "data" string (plain ASCII keystrokes, no escapes) written to the PTY, each
 * PTY read sent back as one {"type":"output","data":...} frame; one connection at a time, one
 * thread, epoll. No tickets, limits, validation beyond what the benchmark's client sends, flow
 * control or session ending: never expose it.
 * Usage: c-relay [shell account]; prints its loopback port on stdout.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <pty.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static int handshake(int c) {
  char buf[4096] = "";
  size_t n = 0;
  while (!strstr(buf, "\r\n\r\n")) {
    if (n == sizeof buf - 1) return -1;
    ssize_t r = read(c, buf + n, sizeof buf - 1 - n);
    if (r <= 0) return -1;
    n += (size_t)r;
    buf[n] = 0;
  }
  char *k = strcasestr(buf, "Sec-WebSocket-Key:");
  if (!k) return -1;
  k += 18;
  while (*k == ' ') k++;
  char key[100];
  size_t i = 0;
  while (k[i] && k[i] != '\r' && i < 60) key[i] = k[i], i++;
  strcpy(key + i, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11");
  unsigned char sha[20], accept[32];
  SHA1((unsigned char *)key, strlen(key), sha);
  EVP_EncodeBlock(accept, sha, 20);
  char resp[256];
  int m = snprintf(resp, sizeof resp,
                   "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
  return write(c, resp, (size_t)m) == m ? 0 : -1;
}

/* Client frames in `in`: write each text frame's "data" to the PTY; returns the bytes consumed, or -1 at close. */
static long frames(unsigned char *in, long have, int master) {
  long used = 0;
  while (have - used >= 6) {
    unsigned char *f = in + used;
    long len = f[1] & 127, head = 2;
    if (len == 127) return -1;
    if (len == 126) len = (f[2] << 8) | f[3], head = 4;
    if (have - used < head + 4 + len) break;
    unsigned char *mask = f + head, *p = f + head + 4;
    for (long j = 0; j < len; j++) p[j] ^= mask[j & 3];
    if ((f[0] & 15) == 8) return -1;
    char *d = memmem(p, (size_t)len, "\"data\":\"", 8);
    char *q = d ? memchr(d + 8, '"', (size_t)((char *)p + len - d - 8)) : NULL;
    if ((f[0] & 15) == 1 && q && write(master, d + 8, (size_t)(q - d - 8)) < 0) return -1;
    used += head + 4 + len;
  }
  return used;
}

/* One PTY read as one output frame. */
static int output(int c, const unsigned char *out, long n) {
  static unsigned char frame[4 + 8 * 6 * 1024 + 64];
  unsigned char *b = frame + 4, *start = b;
  b += sprintf((char *)b, "{\"type\":\"output\",\"data\":\"");
  for (long j = 0; j < n; j++) {
    if (out[j] == '"' || out[j] == '\\') *b++ = '\\', *b++ = out[j];
    else if (out[j] < 0x20) b += sprintf((char *)b, "\\u%04x", out[j]);
    else *b++ = out[j];
  }
  b += sprintf((char *)b, "\"}");
  long len = b - start;
  unsigned char *f = start - (len < 126 ? 2 : 4);
  f[0] = 0x81;
  if (len < 126) f[1] = (unsigned char)len;
  else f[1] = 126, f[2] = (unsigned char)(len >> 8), f[3] = (unsigned char)len;
  return write(c, f, (size_t)(b - f)) < 0 ? -1 : 0;
}

static void serve(int c, const struct passwd *pw) {
  int one = 1;
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (handshake(c)) return;
  int master;
  struct winsize size = {24, 80, 0, 0};
  pid_t pid = forkpty(&master, NULL, NULL, &size);
  if (pid < 0) return;
  if (pid == 0) {
    if (pw && (setgid(pw->pw_gid) || initgroups(pw->pw_name, pw->pw_gid) || setuid(pw->pw_uid) || chdir(pw->pw_dir))) _exit(126);
    char *env[] = {"PATH=/usr/bin:/bin", "TERM=xterm-256color", "LANG=C.UTF-8", NULL};
    execle("/bin/bash", "bash", "-c", "stty raw -echo; exec cat", (char *)NULL, env);
    _exit(127);
  }
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN};
  ev.data.fd = c;
  epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
  ev.data.fd = master;
  epoll_ctl(ep, EPOLL_CTL_ADD, master, &ev);
  static unsigned char in[65536], out[8192];
  long have = 0;
  for (int open = 1; open;) {
    struct epoll_event ready[2];
    int n = epoll_wait(ep, ready, 2, -1);
    for (int e = 0; e < n && open; e++) {
      if (ready[e].data.fd == c) {
        ssize_t r = read(c, in + have, sizeof in - (size_t)have);
        long used = r > 0 ? frames(in, have + r, master) : -1;
        if (used < 0) open = 0;
        else have += r - used, memmove(in, in + used, (size_t)have);
      } else {
        ssize_t r = read(master, out, sizeof out);
        if (r <= 0 || output(c, out, r)) open = 0;
      }
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  close(master);
  close(ep);
  close(c);
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  const struct passwd *pw = geteuid() == 0 ? getpwnam(argc > 1 ? argv[1] : "playfield-shell") : NULL;
  if (geteuid() == 0 && !pw) return 2;
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 16) || getsockname(s, (struct sockaddr *)&a, &alen)) return 1;
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  for (;;) {
    int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
    if (c >= 0) serve(c, pw);
  }
}
