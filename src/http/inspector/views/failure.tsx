import type { FC } from "hono/jsx";
import type { AppError } from "../../../core/errors";

/** An operation's typed failure, prominently: code, `reason` when the error carries one, message. */
export const Failure: FC<{ testid: string; error: AppError }> = ({ testid, error }) => {
  const reason = error.details?.["reason"];
  return (
    <div class="failure" data-testid={testid} data-code={error.code} data-reason={typeof reason === "string" ? reason : ""}>
      <p>
        <strong>
          <code>{error.code}</code>
        </strong>
        {typeof reason === "string" ? (
          <>
            {" "}
            reason <code>{reason}</code>
          </>
        ) : null}
      </p>
      <p>{error.message}</p>
    </div>
  );
};
