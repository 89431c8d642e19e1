// Build shim, wasm32-wasi only: emmalloc.c includes <emscripten/threading.h> for its pthreads build
// (__EMSCRIPTEN_PTHREADS__), which this is not; it needs nothing from it. See ../emscripten.h.
#pragma once
