import t from 'tap';
import { readFileSync } from 'node:fs';
import { readmeWithTable } from '../../scripts/config-doc.ts';

t.test('the README documents every setting as the schema defines it', async (t) => {
  const readme = readFileSync('README.md', 'utf8');
  t.equal(readme, readmeWithTable(readme), 'run `node --import tsx scripts/config-doc.ts --write` after changing a setting');
});

t.test('the README names the two commands and the Procfile processes', async (t) => {
  const readme = readFileSync('README.md', 'utf8');
  t.match(readme, /```sh\nnpm start\n```/);
  t.match(readme, /```sh\nnpm test\n```/);
  const procs = readFileSync('Procfile', 'utf8').trim().split('\n').map((l) => l.split(':')[0]);
  t.same(procs, ['nats', 'gateway', 'wallet', 'job-supervisor', 'browser-pool', 'converter', 'relay-prober']);
});
