import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCidr, parseIPv4 } from '../../../../lib/net/ip.js';
import { birdConfig, protocolName, protocolPeerIP, sessions, type BgpNode, type BirdConfigInput } from './config.js';

const node = (n: number, routeReflector = false): BgpNode => ({ node: `n${n}`, ip: parseIPv4(`192.168.77.${10 + n}`), routeReflector });
const input = (o: Partial<BirdConfigInput> = {}): BirdConfigInput => ({
  nodeName: 'n2', routerId: parseIPv4('192.168.77.12'), asn: 64512,
  podCIDR: parseCidr('10.244.2.0/24').cidr, clusterCIDR: parseCidr('10.244.0.0/16').cidr,
  routeReflector: false, nodes: [node(1), node(3)], ...o,
});

/** The lines of the block that starts with `head` (up to its closing brace at column 0). */
function block(text: string, head: string): string {
  const i = text.indexOf(`${head} {`);
  if (i < 0) return '';
  return text.slice(i, text.indexOf('\n}\n', i) + 3);
}

t.test('protocol names stand for the peer IP and back', async (t) => {
  t.equal(protocolName('192.168.77.12'), 'peer_192_168_77_12');
  t.equal(protocolPeerIP('peer_192_168_77_12'), '192.168.77.12');
  t.equal(protocolPeerIP('nodenet_kernel'), null);
  t.equal(protocolPeerIP('peer_1_2_3'), null);
});

t.test('full mesh: a session to every other node, the higher IP connects', async (t) => {
  const ss = sessions({ ip: parseIPv4('192.168.77.12'), routeReflector: false }, [node(3), node(1), node(2)]);
  t.same(ss.map((s) => [s.node, s.passive, s.rrClient]), [['n1', false, false], ['n3', true, false]], 'itself skipped, sorted by IP; passive towards the higher one');
  // 192.168.77.9 < 192.168.77.10 as numbers, not as strings (Calico's template compares strings).
  const low = sessions({ ip: parseIPv4('192.168.77.10'), routeReflector: false }, [{ node: 'x', ip: parseIPv4('192.168.77.9'), routeReflector: false }]);
  t.equal(low[0]!.passive, false, '.10 connects to .9');
});

t.test('route reflectors: a client peers only with the reflectors; a reflector with everyone, clients as rr client', async (t) => {
  const all = [node(1, true), node(2), node(3), node(4, true)];
  const client = sessions({ ip: parseIPv4('192.168.77.12'), routeReflector: false }, all);
  t.same(client.map((s) => s.node), ['n1', 'n4']);
  t.ok(client.every((s) => !s.rrClient));
  const rr = sessions({ ip: parseIPv4('192.168.77.11'), routeReflector: true }, all);
  t.same(rr.map((s) => [s.node, s.rrClient]), [['n2', true], ['n3', true], ['n4', false]], 'the other reflector is a plain iBGP peer');
  t.same(sessions({ ip: parseIPv4('192.168.77.13'), routeReflector: false }, [node(1), node(2)]).length, 2, 'no reflector anywhere: full mesh');
});

t.test('the config: kernel, device, static block, template and one protocol per peer (golden snippets)', async (t) => {
  const c = birdConfig(input({ logFile: '/run/n2/bgp/bird.log' }));
  t.match(c, /^router id 192\.168\.77\.12;$/m);
  t.match(c, /^log "\/run\/n2\/bgp\/bird\.log" \{ info, remote, warning, error, auth, fatal, bug \};$/m);
  t.match(c, /^define NODENET_BLOCKS = \[ 10\.244\.0\.0\/16\{24,24\} \];$/m, 'imports: the cluster CIDR\'s /24s');
  t.equal(block(c, 'protocol kernel nodenet_kernel'), [
    'protocol kernel nodenet_kernel {',
    '  ipv4 {',
    '    import none;',
    '    export filter {',
    '      if proto = "nodenet_block" then reject;',
    '      if net = NODENET_OWN_BLOCK then reject;',
    '      if source = RTS_BGP then accept;',
    '      reject;',
    '    };',
    '  };',
    '  learn off;',
    '  scan time 2;',
    '  graceful restart on;',
    '  merge paths on;',
    '}',
    '',
  ].join('\n'));
  t.equal(block(c, 'protocol static nodenet_block'), 'protocol static nodenet_block {\n  ipv4;\n  route 10.244.2.0/24 blackhole;\n}\n');
  const tpl = block(c, 'template bgp nodenet_peer');
  for (const l of ['local 192.168.77.12 as NODENET_ASN;', 'direct;', 'graceful restart on;', 'graceful restart time 120;', 'hold time 240;', 'keepalive time 80;', 'connect delay time 1;', 'connect retry time 3;', 'error wait time 5, 60;']) {
    t.ok(tpl.includes(`\n  ${l}\n`), `template: ${l}`);
  }
  t.notOk(tpl.includes('rr cluster id'), 'not a reflector: no cluster id');
  t.equal(block(c, 'protocol bgp peer_192_168_77_11 from nodenet_peer'), 'protocol bgp peer_192_168_77_11 from nodenet_peer {\n  neighbor 192.168.77.11 as NODENET_ASN;\n}\n');
  t.equal(block(c, 'protocol bgp peer_192_168_77_13 from nodenet_peer'), 'protocol bgp peer_192_168_77_13 from nodenet_peer {\n  neighbor 192.168.77.13 as NODENET_ASN;\n  passive on;\n}\n');
  t.match(c, /# Sessions \(full mesh\): 2\./);
});

t.test('the config of a reflector and of a client', async (t) => {
  const rr = birdConfig(input({ routeReflector: true, nodes: [node(1), node(3)] }));
  t.match(block(rr, 'template bgp nodenet_peer'), /\n {2}rr cluster id 244\.0\.0\.1;\n/);
  t.match(block(rr, 'protocol bgp peer_192_168_77_11 from nodenet_peer'), /\n {2}rr client;\n/);
  const client = birdConfig(input({ nodes: [node(1, true), node(3)], gracefulRestartS: 5, holdS: 9 }));
  t.notOk(client.includes('peer_192_168_77_13'), 'no session to the other client');
  t.match(client, /# Sessions \(peers: the route reflectors\): 1\./);
  t.match(client, /\n {2}graceful restart time 5;\n {2}hold time 9;\n {2}keepalive time 3;\n/);
});

t.test('a log path BIRD cannot quote is refused, not written broken', async (t) => {
  t.throws(() => birdConfig(input({ logFile: '/run/a "b".log' })), /cannot be a BIRD string/);
});

t.test('the config has no peer yet: still a valid file', async (t) => {
  const c = birdConfig(input({ nodes: [] }));
  t.notOk(c.includes('protocol bgp '), 'no session');
  t.match(c, /# Sessions \(full mesh\): 0\./);
});

const bird = spawnSync('sh', ['-c', 'command -v bird'], { encoding: 'utf8' }).stdout.trim();
t.test('bird -p parses every config written (Debian bird2)', { skip: bird ? false : 'bird2 is not installed (scripts/preflight.mjs --test installs it)' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'nodenet-bird-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const cases: Record<string, BirdConfigInput> = {
    mesh: input({ logFile: join(dir, 'bird.log') }),
    reflector: input({ routeReflector: true, nodes: [node(1), node(3), node(4, true)] }),
    client: input({ nodes: [node(1, true), node(3)], asn: 4_200_000_000, gracefulRestartS: 5, holdS: 9 }),
    empty: input({ nodes: [], podCIDR: parseCidr('10.244.2.0/26').cidr }),
    named: input({ nodeName: 'n"2\nx' }),
  };
  for (const [name, c] of Object.entries(cases)) {
    const f = join(dir, `${name}.conf`);
    writeFileSync(f, birdConfig(c));
    const r = spawnSync(bird, ['-p', '-c', f], { encoding: 'utf8' });
    t.equal(r.status, 0, `${name}: ${r.stderr.trim()}`);
  }
  // The check itself can fail: a broken file is refused.
  const bad = join(dir, 'bad.conf');
  writeFileSync(bad, birdConfig(input()).replace('merge paths on;', 'merge paths maybe;'));
  t.not(spawnSync(bird, ['-p', '-c', bad], { encoding: 'utf8' }).status, 0, 'a broken config fails the parse');
});
