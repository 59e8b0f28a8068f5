// A cluster node's log on disk (shared/nats/server.ts `logFile`) and a cluster actor's output
// (scripts/cluster-lib.ts `output.log`) stop growing at their bound (shared/log.ts): past
// it the file becomes `<file>.1` (one previous kept) and a new one starts; a file that cannot be
// written is dropped silently (the log is a help, the node must not stop for it).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { rotatingFile } from '../../shared/log.ts';
import { tempDir } from '../helpers/nats.ts';

t.test('rotated at its bound, one previous file kept', async (t) => {
  const file = join(tempDir('payloads-natslog-'), 'nats-server.log');
  const log = rotatingFile(file, 10);
  log.write(Buffer.from('aaaa\n'));
  log.write(Buffer.from('bbbb\n'));
  log.write(Buffer.from('cccc\n')); // 15 bytes would pass the 10: a new file
  log.write(Buffer.from('dddd\n'));
  log.write(Buffer.from('eeee\n'));
  log.close();
  t.equal(readFileSync(file, 'utf8'), 'eeee\n');
  t.equal(readFileSync(`${file}.1`, 'utf8'), 'cccc\ndddd\n', 'the one before, the oldest gone');
});

t.test('a file that cannot be opened is no error', async (t) => {
  const file = join(tempDir('payloads-natslog-'), 'no-such-dir', 'nats-server.log');
  const log = rotatingFile(file, 10);
  t.doesNotThrow(() => {
    log.write(Buffer.from('x\n'));
    log.close();
  });
  t.notOk(existsSync(file));
});
