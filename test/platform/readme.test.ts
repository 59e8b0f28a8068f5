import t from 'tap';
import { readFileSync } from 'node:fs';

const readme = readFileSync('README.md', 'utf8');

t.test('the README names the two commands and the Procfile processes', async (t) => {
  t.match(readme, /```sh\nnpm start\n```/);
  t.match(readme, /```sh\nnpm test\n```/);
  const procs = readFileSync('Procfile', 'utf8')
    .trim()
    .split('\n')
    .map((l) => l.split(':')[0]);
  t.same(procs, ['nats', 'gateway', 'wallet', 'job-supervisor', 'browser-pool', 'converter', 'relay-prober']);
});

t.test('the README stays a five-minute read: under 120 lines, decisions and settings in docs/', async (t) => {
  const lines = readme.split('\n').length;
  t.ok(lines < 120, `${lines} lines (move detail to docs/ and link it)`);
  t.notMatch(readme, '<!-- config:start -->', 'the settings table lives in docs/configuration.md');
  t.match(readme, '](docs/decisions.md)', 'the README links the decisions');
});
