/**
 * The Vagrant path cannot boot here (no box can be downloaded), so what can
 * drift is checked statically against the code: the Vagrantfile parses
 * (`ruby -c`; CI installs ruby), every provisioning script it names exists
 * and parses (`bash -n`), and what provision/nodenet.sh hands the project
 * is what the project accepts: the agent's config file (written there as a
 * heredoc) passes the agent's own config validation in every proxy mode the
 * Vagrantfile offers, and every control-plane flag it passes is one the CLI
 * knows. The shared scripts themselves (packages.sh, system.sh, node.sh)
 * run in every test-vm image build and VM boot, and nodenet.sh runs, under
 * systemd, in the test-vm suite `vagrant-ipvs` (.ci/run's VM stage).
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../agent/src/lab/lab.js';
import { parseAgentConfig } from '../agent/src/config/config.js';

const vagrantfile = readFileSync(join(REPO, 'Vagrantfile'), 'utf8');
const nodenetSh = readFileSync(join(REPO, 'test-vm/provision/nodenet.sh'), 'utf8');

t.test('the Vagrantfile parses (ruby -c)', async (t) => {
  const r = spawnSync('ruby', ['-c', join(REPO, 'Vagrantfile')], { encoding: 'utf8' });
  t.notOk(r.error, `ruby runs (apt-get install -y ruby): ${r.error?.message ?? ''}`);
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /Syntax OK/);
});

t.test('every provisioning script it names exists and parses (bash -n)', async (t) => {
  const named = new Set<string>();
  for (const m of vagrantfile.matchAll(/test-vm\/provision\/([a-z-]+\.sh)/g)) named.add(m[1]!);
  for (const m of vagrantfile.matchAll(/#\{PROVISION\}\/([a-z-]+\.sh)/g)) named.add(m[1]!);
  t.same([...named].sort(), ['node.sh', 'nodenet.sh', 'packages.sh', 'system.sh'], 'the scripts the Vagrantfile runs');
  t.match(vagrantfile, /PROVISION = "\/vagrant\/test-vm\/provision"/, 'from the synced project, the same files test-vm uses');
  for (const f of named) {
    const path = join(REPO, 'test-vm/provision', f);
    t.ok(existsSync(path), `${f} exists`);
    const r = spawnSync('bash', ['-n', path], { encoding: 'utf8' });
    t.equal(r.status, 0, `${f} parses: ${r.stderr}`);
  }
});

t.test("nodenet.sh's agent config is one the agent accepts, in every proxy mode", async (t) => {
  const m = /cat > \/etc\/nodenet\/agent\.json <<JSON\n([\s\S]*?)\nJSON/.exec(nodenetSh);
  t.ok(m, 'the heredoc is there');
  const modes = /NODENET_PROXY_MODE=\S+ vagrant up\s+# ([^\n]+)/.exec(vagrantfile)?.[1] ?? '';
  t.match(modes, /iptables.*nftables.*ipvs/, 'the Vagrantfile offers iptables, nftables and ipvs');
  for (const mode of ['iptables', 'nftables', 'ipvs']) {
    const text = m![1]!.replace(/\$name/g, 'node2').replace(/\$mode/g, mode).replace(/\$iface/g, 'eth1');
    const cfg = parseAgentConfig(JSON.parse(text));
    t.equal(cfg.proxyMode, mode, `${mode}: parsed and kept`);
    t.equal(cfg.backend, 'vxlan', `${mode}: the overlay on`);
  }
});

t.test("nodenet.sh's control-plane flags are ones the CLI knows", async (t) => {
  const line = /nodenet\.js control-plane ([^"]+)"/.exec(nodenetSh)?.[1] ?? '';
  const flags = [...line.matchAll(/(--[a-z-]+)/g)].map((x) => x[1]!);
  t.ok(flags.length >= 4, `flags found: ${flags.join(' ')}`);
  const help = spawnSync(process.execPath, ['--import', 'tsx', join(REPO, 'agent/src/main.ts'), 'control-plane', '--help'], { encoding: 'utf8' });
  const usage = `${help.stdout}${help.stderr}`;
  for (const f of flags) t.match(usage, new RegExp(`\\[?${f}[ \\]]`), `${f} is a control-plane flag`);
});
