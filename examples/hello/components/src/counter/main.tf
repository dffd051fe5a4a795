variable "message" {
  type = string
}

# terraform_data is built into Terraform: no provider download, works offline.
resource "terraform_data" "message" {
  input = var.message
}

output "upper" {
  value = upper(terraform_data.message.output)
}

output "length" {
  value = length(var.message)
}
