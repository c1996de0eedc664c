/**
 * Why a contact job cannot succeed however often it is tried again: the job record or its upload
 * is gone, or the file is not a CSV Mailroom can read. The activity fails the job for good with
 * `kind` as the failure's type; every other error is worth a retry.
 */
export class ContactJobFailure extends Error {
  constructor(
    readonly kind: 'JobNotFound' | 'UploadMissing' | 'InvalidCsv',
    message: string,
  ) {
    super(message);
  }
}
