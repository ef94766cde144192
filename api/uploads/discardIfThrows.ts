import { isDatabaseUnavailable } from '../../shared/errors/unavailable.ts';

/**
 * Runs `step`; if it throws, the stored upload goes now, since no job or file will own it (once one
 * does, its own clean-up removes it). Except when the database went away during the step: whether
 * its transaction committed is then unknown (PostgreSQL may have committed the file or job row and
 * lost the answer), so the object stays, and the orphan-upload sweep (maintenance__prune) deletes it
 * after a day if nothing records it. Deleting it then would leave a stored file without its bytes.
 * The quota hold goes either way: a committed file turned it into stored bytes already.
 */
export async function discardIfThrows<T>(
  upload: { discard(options?: { keepObject?: boolean }): Promise<void> },
  step: () => T | Promise<T>,
): Promise<T> {
  try {
    return await step();
  } catch (error) {
    await upload.discard({ keepObject: isDatabaseUnavailable(error) });
    throw error;
  }
}
