#!/usr/bin/env bash
# Start a local PostgreSQL server for the gradebook tests (Debian's postgresql) and print its URL.
# As root: installs the package if missing, starts the cluster, creates role "labs" (may create
# databases: each test run uses a fresh one). Used by .ci/run; safe to run twice.
set -euo pipefail
if ! command -v pg_lsclusters >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
fi
read -r version cluster _ <<<"$(pg_lsclusters --no-header | head -n1)"
pg_ctlcluster "$version" "$cluster" start >/dev/null 2>&1 || true
su postgres -c "psql -qtAc \"select 1 from pg_roles where rolname = 'labs'\"" | grep -q 1 ||
  su postgres -c "psql -qc \"create role labs login createdb password 'labs'\""
echo "postgresql://labs:labs@127.0.0.1:5432/postgres"
