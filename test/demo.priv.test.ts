/**
 * `npm start` is the first thing a user runs: the demo must work in both
 * proxy modes and leave nothing behind. Runs the built CLI as a user does.
 */
import t from 'tap';
import { REPO } from '../agent/src/lab/lab.js';
import { shOk } from '../agent/src/testing/lab.js';

const demoNamespaces = async () => (await shOk(['ip', 'netns', 'list'])).stdout.split('\n').filter((l) => /^nn-demo/.test(l));

for (const mode of ['iptables', 'nftables'] as const) {
  t.test(`demo in ${mode} mode`, async (t) => {
    const before = await demoNamespaces();
    const r = await shOk([process.execPath, `${REPO}bin/nodenet.js`, 'demo', '--proxy-mode', mode]);
    t.equal(r.exitCode, 0, r.stderr.slice(-2000));
    const out = r.stdout;
    t.match(out, /client → web {3}http:\/\/10\.244\.1\.\d+:8080\/ {2}hello from web \(pid \d+\)/);
    t.match(out, /client → web {3}while the app is down: .*ECONNREFUSED/);
    t.match(out, /restarted web's app: pid \d+, pod IP still 10\.244\.1\.\d+/);
    const backends = new Set([...out.matchAll(/client → 10\.96\.0\.10:80 {2}hello from (web2?) /g)].map((m) => m[1]));
    t.same([...backends].sort(), ['web', 'web2'], 'TCP through the ClusterIP reached both backends, as the demo says');
    t.match(out, /web ×\d+, web2 ×\d+|web2 ×\d+, web ×\d+/);
    t.match(out, mode === 'nftables' ? /ping 10\.96\.0\.10: no reply: Destination Port Unreachable/ : /ping 10\.96\.0\.10: no reply after \d+ ms/);
    t.match(out, new RegExp(`\\(${mode}, `), 'trace found the live rules of the mode');
    t.match(out, /destination: one of: 10\.244\.1\.\d+:8080, 10\.244\.1\.\d+:8080/);
    t.match(out, /cleaning up/);
    t.same(await demoNamespaces(), before, 'no namespace left behind');
  });
}
