/**
 * `nodenet control-plane migrate`'s flags (pure), and the command over a
 * fake migration: what it asks for and what it prints.
 */
import t from 'tap';
import type { MigrationReport, SqliteToEtcd } from '../../../controlplane/store/migrate.js';
import { FlagError } from './flags.js';
import { DEFAULT_DATA_DIR, formatMigration, migrateArgs, migrateCommand, MIGRATE_USAGE } from './migrate-cmd.js';

const args = (m: Record<string, string>) => migrateArgs(new Map(Object.entries(m)));

t.test('--from sqlite:DIR --to etcd:URL,...: the directory, the endpoints, the default prefix', async (t) => {
  t.same(args({ from: 'sqlite:/srv/cp', to: 'etcd:http://10.0.0.1:2379,http://10.0.0.2:2379' }), {
    dir: '/srv/cp', endpoints: 'http://10.0.0.1:2379,http://10.0.0.2:2379', prefix: '/registry', allowNonEmpty: false,
  });
  t.same(args({ from: 'sqlite', to: 'etcd:127.0.0.1:2379', 'etcd-prefix': '/nodenet', 'allow-non-empty': 'true' }), {
    dir: DEFAULT_DATA_DIR, endpoints: '127.0.0.1:2379', prefix: '/nodenet', allowNonEmpty: true,
  }, 'plain sqlite is the control plane\'s default data directory');
});

t.test('anything else is a usage error naming the flag', async (t) => {
  t.throws(() => args({ to: 'etcd:127.0.0.1:2379' }), /migrate needs --from sqlite:DIR/);
  t.throws(() => args({ from: 'sqlite:/x' }), /migrate needs --to etcd:URL/);
  t.throws(() => args({ from: 'etcd:127.0.0.1:2379', to: 'etcd:127.0.0.1:2380' }), /--from "etcd:127\.0\.0\.1:2379": the source is a SQLite data directory/);
  t.throws(() => args({ from: 'sqlite:/x', to: 'sqlite:/y' }), /--to "sqlite:\/y": the target is etcd/);
  t.throws(() => args({ from: 'postgres://db', to: 'etcd:127.0.0.1:2379' }), /--from "postgres:\/\/db": sqlite:DIR or etcd:URL/);
  t.throws(() => args({ from: 'sqlite:/x', to: 'etcd:' }), /--to: no etcd endpoint given/);
  t.throws(() => args({ from: 'sqlite:/x', to: 'etcd:https://10.0.0.1:2379' }), /--to: .*only http:\/\/ is supported/);
  t.throws(() => args({ from: 'sqlite:/x', to: 'etcd:127.0.0.1:2379', 'etcd-prefix': 'registry' }), /^--etcd-prefix "registry": a key prefix/);
  for (const bad of [{ to: 'x' }, { from: 'sqlite:/x', to: 'etcd:' }]) t.throws(() => args(bad), FlagError);
});

const report: MigrationReport = {
  sourceRev: 45_210, targetRevBefore: 1, targetRev: 512, copied: 31_003, skipped: 0, extra: 0, verified: 31_003, transactions: 511, ms: 4_240,
  resources: [
    { resource: 'endpointslices.discovery.k8s.io', copied: 20_000, skipped: 0 },
    { resource: 'ipaddresses.networking.k8s.io', copied: 501, skipped: 0 },
    { resource: 'services', copied: 10_502, skipped: 0 },
  ],
};

t.test('the command: the migration it asks for, its progress on stderr and the report on stdout', async (t) => {
  let asked: SqliteToEtcd | undefined;
  const out: string[] = [];
  const err: string[] = [];
  const code = await migrateCommand(['--from', 'sqlite:/srv/cp', '--to', 'etcd:http://127.0.0.1:2379'], {
    stdout: (s) => out.push(s),
    stderr: (s) => err.push(s),
    migrate: async (a) => {
      asked = a;
      for (const copied of [64, 4_992, 5_056, 9_000, 10_112]) a.onProgress?.({ copied, skipped: 0 });
      return report;
    },
  });
  t.equal(code, 0);
  t.match(asked, { dir: '/srv/cp', endpoints: 'http://127.0.0.1:2379', prefix: '/registry', allowNonEmpty: false });
  t.same(err, ['migrate: 5,056 copied\n', 'migrate: 10,112 copied\n'], 'a progress line every 5,000 objects or so');
  const text = out.join('');
  t.match(text, /^migrated 31,003 object\(s\) from sqlite:\/srv\/cp \(revision 45,210\) to etcd:http:\/\/127\.0\.0\.1:2379 under \/registry in 4\.2 s \(511 transaction\(s\); etcd revision 1 → 512\)/);
  t.match(text, /RESOURCE +COPIED\nendpointslices\.discovery\.k8s\.io +20,000\nipaddresses\.networking\.k8s\.io +501\nservices +10,502\n/);
  t.notMatch(text, /ALREADY THERE/, 'no skipped column when nothing was skipped');
  t.match(text, /read back: 31,003 object\(s\) in etcd, each the same/);
  t.match(text, /Start the control plane with --storage etcd:http:\/\/127\.0\.0\.1:2379 \(and --data-dir \/srv\/cp/);
});

t.test('a resumed migration reports what was already there, and a prefix of its own', async (t) => {
  const a = { dir: '/d', endpoints: 'http://h:2379', prefix: '/nodenet', allowNonEmpty: true };
  const text = formatMigration(a, { ...report, copied: 3, skipped: 31_000, extra: 2, resources: [{ resource: 'services', copied: 3, skipped: 31_000 }] });
  t.match(text, /RESOURCE +COPIED +ALREADY THERE\nservices +3 +31,000\n/);
  t.match(text, /2 key\(s\) were in etcd before and are left alone/);
  t.match(text, /--storage etcd:http:\/\/h:2379 --etcd-prefix \/nodenet/);
});

t.test('-h prints the usage; a stray argument or an unknown flag is a usage error; a failed migration\'s error is the caller\'s', async (t) => {
  const out: string[] = [];
  t.equal(await migrateCommand(['-h'], { stdout: (s) => out.push(s), migrate: async () => report }), 0);
  t.equal(out.join(''), `${MIGRATE_USAGE}\n`);
  await t.rejects(migrateCommand(['extra'], { stdout: () => {}, migrate: async () => report }), /unexpected argument "extra"/);
  await t.rejects(migrateCommand(['--force'], { stdout: () => {}, migrate: async () => report }), /unknown flag --force/);
  const boom = new Error('the target already holds objects');
  await t.rejects(migrateCommand(['--from', 'sqlite:/d', '--to', 'etcd:127.0.0.1:2379'], { stdout: () => {}, migrate: async () => { throw boom; } }), boom);
});
