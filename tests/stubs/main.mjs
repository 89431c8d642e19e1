#!/usr/bin/env node
// Runs the third-party API stubs standalone: `node tests/stubs/main.mjs [--port 8799]`.
// Used by scripts/dev; stops on SIGINT/SIGTERM.
import { startStubs } from "./stub-server.mjs";

const index = process.argv.indexOf("--port");
const port = Number(index > 0 ? process.argv[index + 1] : (process.env.STUB_PORT ?? 8799));
const stubs = await startStubs({ port });
console.log(`stubs listening on ${stubs.url}`);
const stop = async () => {
  await stubs.close();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
