#!/usr/bin/env bash
# Start the database services the tests need if they are down (commands from DEVELOPERS.md).
set -u
if ! (exec 3<>/dev/tcp/127.0.0.1/3306) 2>/dev/null; then
  echo "starting MariaDB"
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
fi
if ! (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then
  echo "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
  echo "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi
if [ ! -x /usr/bin/chromium ]; then
  echo "installing chromium (tests/browser)"
  apt-get update -qq && apt-get install -y -qq chromium || true
fi
for port in 3306 5432 6379; do
  for _ in $(seq 1 30); do
    (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
    sleep 1
  done
done
