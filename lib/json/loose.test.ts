import t from 'tap';
import { arr, obj, objs, str } from './loose.js';

t.test('each reader gives the value of its type, or an empty one', async (t) => {
  t.same(obj({ a: 1 }), { a: 1 });
  t.equal(obj([1]), undefined, 'an array is not an object');
  t.equal(obj(null), undefined);
  t.equal(obj('x'), undefined);
  t.same(arr([1, 2]), [1, 2]);
  t.same(arr({ 0: 1 }), []);
  t.equal(str('x'), 'x');
  t.equal(str(5), '', 'a number is not a string');
  t.same(objs([{ a: 1 }, 2, null, [3], { b: 2 }]), [{ a: 1 }, { b: 2 }]);
});
