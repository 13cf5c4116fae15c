/*
 * elan_hello: the smallest libelan program, built against an installed
 * libelan with pkg-config (tests/apps/check): attach a context, print its
 * address and the fabric's size, detach.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <libelan.h>

int main(void)
{
	elan_ctx_t *ctx;
	char host[64] = "?";
	int rc;

	gethostname(host, sizeof(host) - 1);
	rc = elan_open(0x19, &ctx);
	if (rc) {
		fprintf(stderr, "elan_hello on %s: elan_open: %s\n", host, strerror(-rc));
		return 1;
	}
	printf("elan_hello on %s: context address 0x%x, %u nodes\n", host,
	       elan_addr(ctx), elan_nodes(ctx));
	elan_close(ctx);
	return 0;
}
