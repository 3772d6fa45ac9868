import t from 'tap';
import { LineSplitter, parseWatchLine } from './ndjson.js';

t.test('LineSplitter: lines across and within chunks', async (t) => {
  const s = new LineSplitter();
  t.same(s.push('{"a":1}\n{"b"'), ['{"a":1}']);
  t.equal(s.pending, '{"b"');
  t.same(s.push(':2}\n'), ['{"b":2}']);
  t.same(s.push('{"c":3}\n{"d":4}\n{"e"'), ['{"c":3}', '{"d":4}']);
  t.same(s.push(''), [], 'an empty chunk completes nothing');
  t.same(s.push(':5}\n\n\n'), ['{"e":5}'], 'blank lines dropped');
  t.equal(s.pending, '');
});

t.test('parseWatchLine: type, name and resourceVersion', async (t) => {
  t.same(parseWatchLine('{"type":"ADDED","object":{"kind":"Service","metadata":{"name":"w10-3","resourceVersion":"42"}}}'), { type: 'ADDED', name: 'w10-3', resourceVersion: '42' });
  t.same(parseWatchLine('{"type":"ERROR","object":{"kind":"Status","code":410}}'), { type: 'ERROR', name: '', resourceVersion: '' }, 'a Status has no name');
  t.same(parseWatchLine('{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}'), { type: 'BOOKMARK', name: '', resourceVersion: '7' });
  t.throws(() => parseWatchLine('{"object":{}}'), /no type/);
  t.throws(() => parseWatchLine('null'), /not an object/);
  t.throws(() => parseWatchLine('{"type":'), SyntaxError);
});
