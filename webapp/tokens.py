"""The tokens router of /api/v1/: list, create and revoke your own API tokens (as /settings/tokens/)."""

from ninja import Path, Router
from ninja.responses import Status

from runs.http import ApiRequest
from runs.schemas import MAX_ID, DeletedOut, ErrorOut, TokenCreatedOut, TokenIn, TokenOut, errors
from runs.services import ServiceError
from webapp import auth

router = Router()


@router.get("/tokens", response={200: list[TokenOut], errors(): ErrorOut})
def list_tokens(request: ApiRequest) -> list:
    """Your tokens, newest first (revoked and expired ones too); never their secrets."""
    return auth.user_tokens(request.auth)


@router.post("/tokens", response={201: TokenCreatedOut, errors(400, 403, 415, 422): ErrorOut})
def create_token(request: ApiRequest, payload: TokenIn) -> Status:
    """A new token for you; `token` (the secret) is in this answer only. From a logged-in session
    only (with its CSRF token): a request made with a token is 403 `session_required`, so a leaked
    token cannot mint its successor and revoking it ends the access."""
    if auth.by_token(request):
        raise ServiceError(403, "session_required", "tokens are created from a logged-in session "
                           "(/settings/tokens/ or this endpoint with the session), not with another token")
    row, secret = auth.issue_token(request.auth, payload.name, payload.expires_at)
    return Status(201, {**TokenOut.from_orm(row).dict(), "token": secret})


@router.delete("/tokens/{int:token_id}", response={200: DeletedOut, errors(404, 422): ErrorOut})
def revoke_token(request: ApiRequest, token_id: int = Path(..., ge=1, le=MAX_ID)) -> dict:
    """Revoke one of your tokens: every request with it is 401 from now on."""
    auth.revoke_token(request.auth, token_id)
    return {"id": token_id, "deleted": True}
