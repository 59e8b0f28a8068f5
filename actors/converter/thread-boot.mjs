// Worker-thread entry: loader hooks of the main thread do not reach worker threads, so register
// tsx here before loading the TypeScript worker.
import { register } from 'tsx/esm/api';

register();
await import('./thread.ts');
