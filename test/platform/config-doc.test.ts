import t from 'tap';
import { readFileSync } from 'node:fs';
import { CONFIG_DOC, withTable } from '../../scripts/config-doc.ts';

t.test('docs/configuration.md documents every setting as the schema defines it', async (t) => {
  const doc = readFileSync(CONFIG_DOC, 'utf8');
  t.equal(doc, withTable(doc), 'run `node --import tsx scripts/config-doc.ts --write` after changing a setting');
});
