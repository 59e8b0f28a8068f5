import t from 'tap';
import { loadNativeUws, NativeUwsError } from '../../gateway/uws.ts';

t.test('the native uWebSockets.js binary loads', async (t) => {
  const { uws, from } = loadNativeUws();
  t.match(from, /\.node$/);
  t.type(uws.App, 'function');
});

t.test('without a native build the gateway refuses to start (no silent JS fallback)', async (t) => {
  t.throws(() => loadNativeUws([{ pkg: 'uWebSockets.js', binary: () => 'binaries/uws_nonexistent_abi.node' }, { pkg: 'no-such-package-here', binary: () => 'x.node' }]), NativeUwsError);
  try {
    loadNativeUws([{ pkg: 'uWebSockets.js', binary: () => 'dist/index.js' }]);
    t.fail('the JS fallback must be refused');
  } catch (e) {
    t.type(e, NativeUwsError, 'the package JS emulation is not accepted as uWS');
  }
});
