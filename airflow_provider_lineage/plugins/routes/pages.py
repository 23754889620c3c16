"""The run view's and the estate view's pages (static, no data in them) and this API's own description.

No ``from __future__ import annotations``: FastAPI reads the route functions' annotations at run time.
"""
from airflow.api_fastapi.core_api.security import requires_authenticated
from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse

from airflow_provider_lineage.plugins.routes import STATIC

router = APIRouter()


@router.get("/openapi.json", dependencies=[Depends(requires_authenticated())], include_in_schema=False)
def openapi(request: Request) -> JSONResponse:
    """This API's OpenAPI description, for a signed-in user, when ``[api] enable_swagger_ui`` is on (404 off)."""
    from airflow_provider_lineage import _compat

    on = str(_compat.airflow_conf().get("api", "enable_swagger_ui", fallback="True")).strip().lower()
    if on in ("false", "0", "no", "off", ""):
        raise HTTPException(404, "the API description is off: [api] enable_swagger_ui = False")
    return JSONResponse(request.app.openapi())


@router.get("/", dependencies=[Depends(requires_authenticated())], include_in_schema=False)
def page() -> FileResponse:
    """The run view's page."""
    return FileResponse(STATIC / "index.html", media_type="text/html")


@router.get("/estate", dependencies=[Depends(requires_authenticated())], include_in_schema=False)
def estate_page() -> FileResponse:
    """The estate view's page."""
    return FileResponse(STATIC / "estate.html", media_type="text/html")
