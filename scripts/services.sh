#!/usr/bin/env bash
# services.sh — make sure the local test services Parley needs are running.
#
# Brings up a PostgreSQL 15 server on 127.0.0.1:5432 with trust auth for the
# user "postgres", and a Redis server (Debian's redis-server) on
# 127.0.0.1:6379. Durability settings are switched off (PostgreSQL's fsync,
# synchronous commit, full page writes; Redis saves nothing to disk): these
# servers are for tests and CI only, never for real data.
#
# Idempotent: installs postgresql-15 and redis-server (and the Debian packages the
# tests use: bubblewrap, python3, python3-requests, curl, jq, chromium) only when they are
# missing, creates the cluster only when it is missing, reloads instead of
# restarting a running server, and leaves a Redis that answers alone. A re-run on a machine where everything is already up takes well
# under a second. Runs as root; does not need systemd.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PG_VERSION=15
PG_CLUSTER=main
PG_HOST=127.0.0.1
PG_PORT=5432
PG_BIN=/usr/lib/postgresql/${PG_VERSION}/bin
PG_CONF_DIR=/etc/postgresql/${PG_VERSION}/${PG_CLUSTER}
REDIS_HOST=127.0.0.1
REDIS_PORT=6379

if [ "$(id -u)" -ne 0 ]; then
	echo "services.sh: must run as root" >&2
	exit 1
fi

# 1. Packages: touch apt only when a server binary is absent.
need=()
if [ ! -x "${PG_BIN}/postgres" ] || ! command -v pg_ctlcluster >/dev/null 2>&1; then
	need+=("postgresql-${PG_VERSION}")
fi
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# What the tests need besides the servers: the code-node sandbox (bubblewrap, the system python3
# and the requests many exported code nodes import), curl and jq for the README's quickstart, and
# poppler-utils and prlimit for the PDF tools.
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
[ -x /usr/bin/python3 ] || need+=(python3)
/usr/bin/python3 -c 'import requests' 2>/dev/null || need+=(python3-requests)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v pdftoppm >/dev/null 2>&1 || need+=(poppler-utils)
command -v prlimit >/dev/null 2>&1 || need+=(util-linux)
# The app pages' browser tests drive Debian's chromium, headless.
[ -x /usr/bin/chromium ] || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

cluster_status() {
	# Prints the status column (online/down/…) of our cluster, or nothing.
	pg_lsclusters -h 2>/dev/null | awk -v v="${PG_VERSION}" -v c="${PG_CLUSTER}" '$1==v && $2==c {print $4}'
}

# 2. Cluster: the Debian package may or may not have created one. Test for
# the config file rather than parse pg_lsclusters, which gives up on a
# cluster whose config is broken.
if [ ! -f "${PG_CONF_DIR}/postgresql.conf" ]; then
	pg_createcluster "${PG_VERSION}" "${PG_CLUSTER}" --port "${PG_PORT}" -- --auth=trust >/dev/null
fi

# 3. Configuration. Written only when the content differs, so a re-run does
# not reload for nothing.
# write_if_changed PATH CONTENT FLAGVAR: (re)writes PATH and sets FLAGVAR=1
# when its content differs. Called as a plain command so that set -e covers
# a failed write.
write_if_changed() {
	local path=$1 content=$2
	if [ -f "${path}" ] && [ "$(cat "${path}")" == "${content}" ]; then
		return 0
	fi
	printf '%s\n' "${content}" >"${path}"
	chown postgres:postgres "${path}"
	printf -v "$3" 1
}

hba_changed=0
conf_changed=0
write_if_changed "${PG_CONF_DIR}/pg_hba.conf" "# Managed by scripts/services.sh (test-only: trust auth on loopback).
local   all all               trust
host    all all 127.0.0.1/32  trust
host    all all ::1/128       trust" hba_changed

mkdir -p "${PG_CONF_DIR}/conf.d"
write_if_changed "${PG_CONF_DIR}/conf.d/parley-test.conf" "# Managed by scripts/services.sh. TEST-ONLY: durability is off.
listen_addresses = '${PG_HOST}'
port = ${PG_PORT}
fsync = off
synchronous_commit = off
full_page_writes = off" conf_changed

# 4. Start it, or bring a running server in line with the config:
# listen_addresses and port only take effect on restart, pg_hba on reload.
action=running
case "$(cluster_status)" in
online)
	if [ "${conf_changed}" -eq 1 ]; then
		pg_ctlcluster --skip-systemctl-redirect "${PG_VERSION}" "${PG_CLUSTER}" restart
		action=restarted
	elif [ "${hba_changed}" -eq 1 ]; then
		pg_ctlcluster --skip-systemctl-redirect "${PG_VERSION}" "${PG_CLUSTER}" reload
		action=reloaded
	fi
	;;
*)
	pg_ctlcluster --skip-systemctl-redirect "${PG_VERSION}" "${PG_CLUSTER}" start
	action=started
	;;
esac

# 5. Wait until it accepts connections (up to ~15 s).
pg_ready=0
for _ in $(seq 75); do
	if pg_isready -q -h "${PG_HOST}" -p "${PG_PORT}"; then
		pg_ready=1
		break
	fi
	sleep 0.2
done
if [ "${pg_ready}" -ne 1 ]; then
	echo "services.sh: postgresql ${PG_VERSION}/${PG_CLUSTER} did not become ready on ${PG_HOST}:${PG_PORT}" >&2
	exit 1
fi
echo "services.sh: postgresql ${PG_VERSION}/${PG_CLUSTER} ${action} on ${PG_HOST}:${PG_PORT}"

# 6. Redis: there is no systemd here, so the package's unit does not run it;
# start it daemonized, in memory only, unless one already answers.
redis_up() { redis-cli -h "${REDIS_HOST}" -p "${REDIS_PORT}" ping 2>/dev/null | grep -q PONG; }
action=running
if ! redis_up; then
	mkdir -p /var/lib/redis /var/log/redis
	redis-server --daemonize yes --bind "${REDIS_HOST}" --port "${REDIS_PORT}" \
		--save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/parley-test.log
	action=started
fi
for _ in $(seq 75); do
	if redis_up; then
		echo "services.sh: redis ${action} on ${REDIS_HOST}:${REDIS_PORT}"
		exit 0
	fi
	sleep 0.2
done
echo "services.sh: redis did not become ready on ${REDIS_HOST}:${REDIS_PORT}" >&2
exit 1
