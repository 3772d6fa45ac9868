// Preflight for npm test and npm start: the Debian packages nodenet needs, and
// leftovers from a crashed run. Runs as root (nodenet builds namespaces).
//   node scripts/preflight.mjs            install what is missing, clean leftovers
//   node scripts/preflight.mjs --check    only say what is missing
//   node scripts/preflight.mjs --test     also what only the tests need (ruby, for the Vagrantfile check; python3-kubernetes; etcd; haproxy; bird2)
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const need = {
  ip: 'iproute2', bridge: 'iproute2', iptables: 'iptables', 'iptables-legacy': 'iptables', nft: 'nftables',
  ipset: 'ipset', conntrack: 'conntrack', ping: 'iputils-ping', nsenter: 'util-linux', unshare: 'util-linux',
  cc: 'gcc', 'c++': 'g++', make: 'make', python3: 'python3', socat: 'socat',
  // The tests also run real etcd members (the control plane's etcd storage), HAProxy (the HA lab's balancer) and
  // BIRD 2 (the overlay's bgp backend, which an agent started with --backend bgp needs too); dig in the Pods of the
  // DNS cases; dnsperf and dnsmasq for bench:dns (dnsmasq-base: the binary alone, no service in the root namespace).
  ...(process.argv.includes('--test') ? { ruby: 'ruby', etcd: 'etcd-server', etcdctl: 'etcd-client', haproxy: 'haproxy', bird: 'bird2', birdc: 'bird2', dig: 'dnsutils', dnsperf: 'dnsperf', dnsmasq: 'dnsmasq-base' } : {}),
};
const which = (c) => spawnSync('sh', ['-c', `command -v ${c}`], { stdio: 'ignore' }).status === 0;
const missing = [...new Set(Object.entries(need).filter(([c]) => !which(c)).map(([, p]) => p))];
// The tests also drive the control plane with Kubernetes' official Python client, Debian's build of it (Debian's python3).
const importable = (m) => spawnSync('/usr/bin/python3', ['-c', `import ${m}`], { stdio: 'ignore' }).status === 0;
if (process.argv.includes('--test') && !importable('kubernetes')) missing.push('python3-kubernetes');
const checkOnly = process.argv.includes('--check');

if (process.getuid?.() !== 0) {
  console.error('nodenet builds network namespaces and must run as root (try: sudo npm test).');
  process.exit(1);
}
// A BIRD in this (the root) network namespace: Debian's bird2 package may start its own on install.
const rootBirds = () => {
  const r = spawnSync('pgrep', ['-x', 'bird'], { encoding: 'utf8' });
  const self = spawnSync('readlink', ['/proc/self/ns/net'], { encoding: 'utf8' }).stdout.trim();
  return (r.stdout ?? '').split('\n').filter(Boolean).filter((pid) => spawnSync('readlink', [`/proc/${pid}/ns/net`], { encoding: 'utf8' }).stdout.trim() === self);
};
const birdsBefore = new Set(rootBirds());
if (missing.length) {
  const cmd = `apt-get install -y ${missing.join(' ')}`;
  if (checkOnly) { console.error(`missing packages; run: ${cmd}`); process.exit(1); }
  console.error(`preflight: installing ${missing.join(' ')}`);
  try {
    execFileSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  } catch {
    execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
    execFileSync('apt-get', ['install', '-y', '-qq', ...missing], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  }
}

// nodenet's bgp backend runs a BIRD per node, in the node's namespace; a global one the package started just now
// (where its init script was allowed to run) is stopped, so nothing routes in the root namespace.
if (missing.includes('bird2')) {
  const started = rootBirds().filter((pid) => !birdsBefore.has(pid));
  if (started.length) {
    console.error(`preflight: stopping the BIRD the bird2 package started (${started.join(', ')}); nodenet runs its own per node`);
    spawnSync('sh', ['-c', 'systemctl disable --now bird.service 2>/dev/null; invoke-rc.d bird stop 2>/dev/null; update-rc.d bird disable 2>/dev/null; true'], { stdio: 'ignore' });
    for (const pid of rootBirds().filter((p) => !birdsBefore.has(p))) spawnSync('kill', [pid], { stdio: 'ignore' });
  }
}

// Leftovers of a crashed run: every namespace nodenet's tests and demo make is named nn-*.
const cleanup = new URL('./cleanup.mjs', import.meta.url).pathname;
if (existsSync(cleanup)) execFileSync(process.execPath, [cleanup], { stdio: 'inherit' });
