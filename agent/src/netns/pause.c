/*
 * nodenet-pause: the process that holds a pod sandbox's namespaces.
 *
 * Started as `unshare --net --ipc --uts [--pid --fork --mount-proc] nodenet-pause`.
 * It does nothing but wait, so the namespaces live as long as it does (the
 * network namespace also outlives it while bind-mounted at <runDir>/netns/<name>).
 *
 * - SIGTERM, SIGINT: exit 0. As PID 1 of a pid namespace the kernel drops
 *   signals whose disposition is the default, so a pause must take them
 *   itself: they are blocked and collected with sigwaitinfo().
 * - SIGCHLD: reap every exited child (waitpid loop). As PID 1 it inherits the
 *   orphans of the pod's processes; without this they would stay zombies.
 * - Readiness: once the signal mask is in place it prints "ready <pid>\n" on
 *   stdout (pid as seen inside its pid namespace, 1 under --pid), then points
 *   stdout at /dev/null so nothing ever writes into the starter's pipe again.
 * - SIGPIPE and SIGHUP are ignored: losing the agent must not kill the pod.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		puts("nodenet-pause 1");
		return 0;
	}

	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);

	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0) {
		perror("nodenet-pause: sigprocmask");
		return 2;
	}

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	int devnull = open("/dev/null", O_WRONLY);
	if (devnull >= 0) {
		dup2(devnull, STDOUT_FILENO);
		if (devnull != STDOUT_FILENO) close(devnull);
	}

	for (;;) {
		siginfo_t info;
		int sig = sigwaitinfo(&set, &info);
		if (sig < 0) {
			if (errno == EINTR) continue;
			perror("nodenet-pause: sigwaitinfo");
			return 2;
		}
		if (sig == SIGTERM || sig == SIGINT) return 0;
		if (sig == SIGCHLD) {
			while (waitpid(-1, NULL, WNOHANG) > 0) {
			}
		}
	}
}
