#!/bin/sh
# The example project's tests: run wherever SRX_DEV and SRX_GID_INDEX name
# an RDMA device (tools/srx-ci up prints them; tools/srx-ci vm sets them).
set -eu
cc -Wall -Werror -o write_check write_check.c -libverbs
./write_check "$SRX_DEV" "$SRX_GID_INDEX"

# rdma-core's own example, both ends on the one device; the client tries
# again until the server listens.
ibv_rc_pingpong -d "$SRX_DEV" -g "$SRX_GID_INDEX" -n 100 >server.out 2>&1 &
server=$!
tries=0
until ibv_rc_pingpong -d "$SRX_DEV" -g "$SRX_GID_INDEX" -n 100 127.0.0.1; do
	tries=$((tries + 1))
	[ "$tries" -lt 30 ] || { kill "$server"; exit 1; }
	sleep 1
done
wait "$server"
