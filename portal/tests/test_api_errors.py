"""Every API error names the parameter at fault, nested ones by their path."""

from rest_framework import exceptions

from portal.api import api_exception_handler


def body_for(detail):
    response = api_exception_handler(exceptions.ValidationError(detail), {})
    return response.status_code, response.data["error"]


def test_a_field_error_names_its_field():
    status, error = body_for({"depth": ["Ensure this value is greater than or equal to 1."]})
    assert status == 400
    assert error["param"] == "depth"
    assert error["type"] == "invalid_request_error"
    assert "greater than or equal to 1" in error["message"]


def test_a_nested_list_error_names_its_path_and_skips_valid_items():
    status, error = body_for({"messages": [{}, {"role": ["Not a valid choice."]}]})
    assert error["param"] == "messages[1].role"
    assert "Not a valid choice." in error["message"]


def test_a_non_field_error_has_no_param():
    _, error = body_for({"non_field_errors": ["Pick a treatment and a baseline."]})
    assert error["param"] is None
    assert error["message"] == "Pick a treatment and a baseline."


def test_other_api_exceptions_keep_their_status_and_shape():
    response = api_exception_handler(exceptions.PermissionDenied(), {})
    assert response.status_code == 403
    assert response.data["error"]["type"] == "permission_error"
