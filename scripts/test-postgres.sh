#!/usr/bin/env bash
# A throwaway PostgreSQL server for Aptix's tests and benchmarks, from the Debian
# `postgresql` package's binaries (installed when missing and possible).
#
#   scripts/test-postgres.sh start DIR [--durable]   # prints the server's URL on stdout
#   scripts/test-postgres.sh stop DIR                   # stops it and deletes DIR, data and all
#   scripts/test-postgres.sh database URL               # a new empty database; prints its URL
#
# `start` creates a cluster in DIR/data (initdb, trust authentication, user `postgres`)
# and starts it on a free loopback port, with its Unix socket in DIR and its log in
# DIR/server.log. Without --durable the server skips fsync (tests throw it away); the
# store benchmark passes --durable for figures a deployment would see.
# Members of the role `aptix_password_auth` (made here, NOLOGIN) must give their password
# over TCP (scram-sha-256), as on a deployed server, so tests can check password login.
# Run as root, the server runs as the `postgres` user (PostgreSQL refuses root).
# Set APTIX_PG_BIN to a folder holding initdb and pg_ctl to use other binaries.
set -euo pipefail

die() { echo "test-postgres: $*" >&2; exit 1; }

find_bin_dir() {
  if [[ -n "${APTIX_PG_BIN:-}" ]]; then
    [[ -x "$APTIX_PG_BIN/initdb" && -x "$APTIX_PG_BIN/pg_ctl" ]] ||
      die "APTIX_PG_BIN=$APTIX_PG_BIN holds no initdb and pg_ctl"
    echo "$APTIX_PG_BIN"; return
  fi
  # Debian keeps the server binaries out of PATH, one folder per major version.
  local newest
  newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -n "$newest" && -x "$newest/initdb" ]]; then echo "$newest"; return; fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v pg_ctl)"; return
  fi
  return 1
}

ensure_binaries() {
  if find_bin_dir >/dev/null 2>&1; then find_bin_dir; return; fi
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "test-postgres: PostgreSQL is not installed; installing the Debian package postgresql" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q postgresql >&2 ||
      { apt-get update -q >&2 && apt-get install -y -q postgresql >&2; } ||
      die "apt-get install postgresql failed; install PostgreSQL's server binaries yourself"
    find_bin_dir && return
  fi
  die "PostgreSQL's server binaries (initdb, pg_ctl) were not found. Install them \
(Debian/Ubuntu: sudo apt-get install -y postgresql; macOS: brew install postgresql) \
or set APTIX_PG_BIN to the folder that holds them"
}

# Runs a command as the server's user: ourselves, or `postgres` when we are root.
as_server_user() {
  if [[ "$(id -u)" == 0 ]]; then
    id postgres >/dev/null 2>&1 ||
      useradd --system --no-create-home --shell /usr/sbin/nologin postgres ||
      die "running as root and there is no 'postgres' user to run the server as"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  die "no free loopback port found"
}

start() {
  local dir=$1 durable=${2:-}
  local bin
  bin=$(ensure_binaries)
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [[ ! -e "$dir/data" ]] || die "$dir/data exists; stop and remove the old server first"
  if [[ "$(id -u)" == 0 ]]; then
    as_server_user true
    chown postgres "$dir"
    chmod 0755 "$dir"
  fi
  as_server_user "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C \
    --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  # The first matching line decides: the password rule goes before initdb's trust lines.
  local hba="$dir/data/pg_hba.conf"
  {
    echo "host all +aptix_password_auth 127.0.0.1/32 scram-sha-256"
    echo "host all +aptix_password_auth ::1/128 scram-sha-256"
    cat "$hba"
  } >"$hba.new"
  chown --reference="$hba" "$hba.new" 2>/dev/null || true
  mv "$hba.new" "$hba"
  local options="-c listen_addresses=127.0.0.1 -c max_connections=300 -k $dir"
  if [[ "$durable" != "--durable" ]]; then
    options+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  fi
  local port
  for _ in 1 2 3; do
    port=$(free_port)
    if as_server_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port $options" start >/dev/null; then
      echo "$port" >"$dir/port"
      local url="postgres://postgres@127.0.0.1:$port/postgres"
      if ! "$bin/psql" -X -q -v ON_ERROR_STOP=1 -d "$url" \
        -c "CREATE ROLE aptix_password_auth NOLOGIN" >/dev/null; then
        as_server_user "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
        die "could not create the role aptix_password_auth on the test server (is psql in $bin?)"
      fi
      echo "$url"
      return
    fi
  done
  cat "$dir/server.log" >&2 || true
  die "the server did not start"
}

stop() {
  local dir=$1 bin
  [[ -d "$dir/data" ]] || return 0
  bin=$(find_bin_dir) || die "PostgreSQL's binaries are gone; kill the server by hand"
  as_server_user "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

# A new, empty database on the server at URL (a server URL ending in /postgres), named
# aptix_test_<random>, for one test's isolation.
database() {
  local url=$1 bin name
  bin=$(ensure_binaries)
  name="aptix_test_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
  "$bin/psql" -X -q -v ON_ERROR_STOP=1 -d "$url" -c "CREATE DATABASE $name" >/dev/null ||
    die "could not create a database on the test server"
  echo "${url%/*}/$name"
}

case "${1:-}" in
  start) [[ $# -ge 2 ]] || die "usage: $0 start DIR [--durable]"; start "$2" "${3:-}" ;;
  stop) [[ $# -ge 2 ]] || die "usage: $0 stop DIR"; stop "$2" ;;
  database) [[ $# -ge 2 ]] || die "usage: $0 database URL"; database "$2" ;;
  *) die "usage: $0 start DIR [--durable] | stop DIR | database URL" ;;
esac
