#!/usr/bin/env node
// The `payloads` command. The client is TypeScript run through tsx (as the rest of the repo is).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv);
