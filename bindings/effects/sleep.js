// Timers: sleep (retry backoff, test hooks).

export default {
  async sleep(effect) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Number(effect.ms) || 0)));
    return {};
  },
};
