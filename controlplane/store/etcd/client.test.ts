/**
 * The etcd client's error mapping (pure): which gRPC failures mean "not
 * written" (StoreUnavailable, a 503 the client may simply retry) and which
 * mean "maybe written" (Timeout: the retry must find it applied once or not
 * at all), and the endpoint parser.
 */
import t from 'tap';
import { status } from '@grpc/grpc-js';
import { etcdError, parseEtcdEndpoints } from './client.js';

const grpc = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details });

t.test('a call no member received is StoreUnavailable; one that may have reached a member is Timeout', async (t) => {
  const cases: [number, string, string][] = [
    [status.UNAVAILABLE, 'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:2379. Resolution note: ', 'NN_ERR_STORE_UNAVAILABLE'],
    [status.UNAVAILABLE, 'Name resolution failed for target dns:etcd-0:2379', 'NN_ERR_STORE_UNAVAILABLE'],
    [status.UNAVAILABLE, 'Stream refused by server', 'NN_ERR_STORE_UNAVAILABLE'],
    // The member died with the call in flight: grpc-js reports the reset as UNAVAILABLE, and the write may be
    // committed. Seen in test/controlplane-etcd-faults.test.ts: a CAS answered 503 was read back applied.
    [status.UNAVAILABLE, 'read ECONNRESET', 'NN_ERR_TIMEOUT'],
    [status.UNAVAILABLE, 'read ETIMEDOUT', 'NN_ERR_TIMEOUT'],
    [status.UNAVAILABLE, 'Write error: write EPIPE', 'NN_ERR_TIMEOUT'],
    [status.UNAVAILABLE, 'Connection dropped', 'NN_ERR_TIMEOUT'],
    [status.UNAVAILABLE, 'etcdserver: leader changed', 'NN_ERR_TIMEOUT'],
    [status.UNAVAILABLE, 'etcdserver: request timed out', 'NN_ERR_TIMEOUT'],
    [status.DEADLINE_EXCEEDED, 'Deadline exceeded after 5.001s,remote_addr=127.0.0.1:2379', 'NN_ERR_TIMEOUT'],
    // etcd's own context running out (a call sent with the last sliver of its deadline): seen as a 500 in the
    // quorum-loss fault test before.
    [status.UNKNOWN, 'context deadline exceeded', 'NN_ERR_TIMEOUT'],
    [status.CANCELLED, 'context canceled', 'NN_ERR_TIMEOUT'],
    [status.OUT_OF_RANGE, 'etcdserver: mvcc: required revision has been compacted', 'NN_ERR_EXPIRED'],
    [status.INVALID_ARGUMENT, 'etcdserver: request is too large', 'NN_ERR_STORE'],
  ];
  for (const [code, details, want] of cases) {
    const e = etcdError(grpc(code, details), 'txn');
    t.equal(e.code, want, `${code} ${details}`);
    t.match(e.message, /^etcd txn: /, 'the message names etcd and the call');
  }
  t.match(etcdError(grpc(status.DEADLINE_EXCEEDED, 'Deadline exceeded after 5.001s'), 'txn').message, /outcome is unknown \(is a quorum of etcd members up, with a leader\?\): Deadline exceeded/, 'a deadline says what it likely means');
  t.match(etcdError(grpc(status.UNKNOWN, 'context deadline exceeded'), 'range').message, /etcd range: no answer within the deadline, the outcome is unknown \(is a quorum/, 'and so does etcd\'s own');
  t.match(etcdError(grpc(status.UNAVAILABLE, 'etcdserver: leader changed'), 'txn').message, /is a quorum of etcd members up, with a leader\?\): etcdserver: leader changed/, 'a leader lost says so too');
  // etcd's server-side timeout of a proposal that no quorum commits (seen in the quorum-loss fault test).
  t.match(etcdError(grpc(status.UNAVAILABLE, 'etcdserver: request timed out'), 'txn').message, /etcd txn: no answer within the deadline, the outcome is unknown \(is a quorum of etcd members up, with a leader\?\): etcdserver: request timed out/);
});

t.test('endpoints: URLs or HOST:PORT, http only', async (t) => {
  t.same(parseEtcdEndpoints('http://127.0.0.1:2379, 127.0.0.2:12379'), [{ host: '127.0.0.1', port: 2379 }, { host: '127.0.0.2', port: 12379 }]);
  t.throws(() => parseEtcdEndpoints('https://127.0.0.1:2379'), { code: 'NN_ERR_INVALID_CONFIG' });
  t.throws(() => parseEtcdEndpoints(''), { code: 'NN_ERR_INVALID_CONFIG' });
});
