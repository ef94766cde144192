/**
 * Runs `step`; if it throws, the stored upload goes now, since no job or file will own it (once one
 * does, its own clean-up removes it).
 */
export async function discardIfThrows<T>(
  upload: { discard(): Promise<void> },
  step: () => T | Promise<T>,
): Promise<T> {
  try {
    return await step();
  } catch (error) {
    await upload.discard();
    throw error;
  }
}
