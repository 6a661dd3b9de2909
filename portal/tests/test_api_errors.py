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


def test_a_list_child_error_keyed_by_its_index_names_the_whole_path():
    """DRF reports a ListField's or DictField's bad child under an int key, nested as deep as the fields are."""
    from rest_framework import serializers
    from rest_framework.renderers import JSONRenderer

    class Inner(serializers.Serializer):
        tokens = serializers.ListField(child=serializers.IntegerField())

    class Body(serializers.Serializer):
        grid = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()), required=False)
        rows = serializers.ListField(child=serializers.DictField(child=serializers.IntegerField()), required=False)
        items = Inner(many=True, required=False)

    cases = [
        ({"grid": [[1], [2, "x"]]}, "grid[1][1]"),
        ({"rows": [{"a": 1}, {"a": "x"}]}, "rows[1].a"),
        ({"items": [{"tokens": [1]}, {"tokens": [1, "x"]}]}, "items[1].tokens[1]"),
    ]
    for data, param in cases:
        serializer = Body(data=data)
        assert not serializer.is_valid()
        response = api_exception_handler(serializers.ValidationError(serializer.errors), {})
        assert response.status_code == 400 and response.data["error"]["param"] == param
        assert response.data["error"]["message"] == f"{param}: A valid integer is required."
        JSONRenderer().render(response.data)  # the int keys of `fields` render as JSON

    assert body_for([{0: ["bad"]}])[1]["param"] == "[0][0]"  # a list of int-keyed children keeps both indexes
    assert body_for({0: {1: ["bad"]}})[1]["param"] == "[0][1]"
